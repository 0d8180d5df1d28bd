"""How the API runs on top of Strawberry and graphql-core, beyond types and resolvers.

A contributor adding a field needs none of this: a field is a Strawberry type's
attribute or resolver (app/api/<domain>/), and it works without these modules. They
make it fast and bounded:

- execution.py: an executor that reads plain fields (attributes, no arguments, no
  middleware) and whole lists of plain objects without graphql-core's per-field
  bookkeeping, and lets go of the request's context once the response is built.
- lookahead.py: what the query selects below the field being resolved, with each
  field's arguments as its resolver will get them.
- prefetch.py: list fields of a page's items filled ahead, through the lookahead, so
  their resolvers answer from memory.
- limits.py: the schema's extensions: the token, depth, alias and fragment-expansion
  limits, the parser and validation caches, the cost limit (app/api/cost.py,
  app/api/budget.py) and the private schema switch.

Upgrade checklist (Strawberry and graphql-core are pinned with `~=` in
pyproject.toml). Run `uv run pytest tests/compat tests/api/test_execution.py`
first: each internal below has a test there that fails naming it.

- execution.py subclasses `strawberry.schema.schema.StrawberryGraphQLCoreExecutionContext`
  (graphql-core's `ExecutionContext`) and overrides `execute_field`, `complete_value`,
  `complete_iterable_value` and `build_response`, calling `collect_subfields`,
  `get_stream_usage`, `middleware_manager` and `context_value`; it reads
  `graphql.execution.collect_fields.FieldDetailsList` (`node`, `defer_usage`) and a
  field's Strawberry definition through `GraphQLCoreConverter.DEFINITION_BACKREF`
  (`python_name`, `default_resolver`) and the resolver's `_is_default` mark; its
  once-per-class type check relies on `strawberry.types.cast.TYPE_CAST_ATTRIBUTE` being
  the only thing besides the class that Strawberry's `is_type_of` reads (guarded by
  `test_a_class_once_accepted_is_checked_again_when_cast` in test_execution.py).
  Guarded by tests/compat/test_graphql_core.py (the methods' parameters, the order the
  executor calls them in) and tests/compat/test_strawberry.py
  (`test_the_core_schema_and_field_definitions`). When either library changes how a
  field completes (new arguments, incremental delivery, a new coercion), compare its
  `execute_field`/`complete_value` with ours; tests/api/test_execution.py checks the
  fast path gives graphql-core's own answers and errors.
- lookahead.py reads a resolver's `info._raw_info` (`field_nodes`, `return_type`,
  `variable_values`, `fragments`, `schema`) and calls
  `graphql.execution.values.get_argument_values` with a `VariableValues`. Guarded by
  `test_a_resolver_reads_the_raw_info` (test_strawberry.py) and
  `test_argument_values_from_coerced_variables` (test_graphql_core.py).
- prefetch.py relies on nothing of either library but the lookahead.
- limits.py subclasses Strawberry's `AddValidationRules`, `MaxTokensLimiter`,
  `ParserCache`, `ValidationCache` and `SchemaExtension` (`on_operation`,
  `on_validate`, `on_execute`), takes the `validation_rules` of `MaxAliasesLimiter`
  and `QueryDepthLimiter`, and wraps graphql-core rules' `report_error`; its
  `Validated` sets `execution_context.pre_execution_errors` before yielding from
  `on_validate` (Strawberry then skips its own validation) through
  `ValidationCache.cached_validate_document`, and reads the core schema as
  `Schema._schema`. Guarded by `test_validation_runs_once_through_our_cached_hook` and
  `test_the_core_schema_and_field_definitions` (test_strawberry.py); tests/api/test_errors.py
  and tests/ops/test_limits.py check each limit's answer.

Outside this package the HTTP view's hooks (app/api/app.py), `PreExecutionError`
(app/api/media.py), the websocket handler (app/api/ws.py) and `Schema._schema`
(app/api/access.py) are the other internals used; test_strawberry.py guards them too.
"""
