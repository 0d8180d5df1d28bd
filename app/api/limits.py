"""How big a GraphQL document and its answer may be, and the extensions the schema runs.

The rule classes are built once here, so the validation cache (keyed by
them) is shared by every request; the extensions are passed as classes and
instantiated per request, as Strawberry wants. Every limit error carries the
code LIMIT_EXCEEDED in its extensions, so errors are classified by what made
them, not by their wording.

The cost limit bounds the answer before anything runs: the estimated nodes
of an operation are, summed over the lists it selects, the product of the
list sizes along the path to each (a connection's `first`, its default when
omitted, counted where its `edges` are selected; a list without paging
counts UNPAGED_LIST_ESTIMATE).
"""

from collections.abc import Iterator
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLList,
    GraphQLNonNull,
    GraphQLSchema,
    GraphQLSyntaxError,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    VariableNode,
    get_named_type,
)
from graphql.language import Lexer, Source, TokenKind
from graphql.validation import ASTValidationRule, NoSchemaIntrospectionCustomRule, ValidationContext
from strawberry.extensions import (
    AddValidationRules,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    SchemaExtension,
    ValidationCache,
)

from app.api.pagination import DEFAULT_FIRST

MAX_DEPTH = 20  # a resource's blast radius' resources' dependents: about 12
MAX_ALIASES = 100
MAX_TOKENS = 5_000  # GraphiQL's introspection query is about 300
MAX_FIELDS = 5_000  # fields once fragments are expanded (the rules below expand them)
# About 2.5 s of work on this project's machine (an answer costs ~0.1 ms a node, the
# CPU of the one event loop): a default page (100) with two nested default pages,
# or `resources(first: 1000)` with two nested lists of 12.
MAX_NODES = 25_000
UNPAGED_LIST_ESTIMATE = 10  # `tables`, `columns`: short lists without paging
CACHE_SIZE = 256  # distinct documents kept parsed and validated
LIMIT_EXCEEDED = "LIMIT_EXCEEDED"


def limit_error(message: str, detail: dict[str, int] | None = None) -> GraphQLError:
    extensions: dict[str, Any] = {"code": LIMIT_EXCEEDED}
    if detail:
        extensions["detail"] = detail
    return GraphQLError(message, extensions=extensions)


def _coded(rule: type[ASTValidationRule]) -> type[ASTValidationRule]:
    """`rule` whose errors (reported while it is built, as Strawberry's limiters do)
    carry the LIMIT_EXCEEDED code."""

    class Coded(rule):  # type: ignore[valid-type, misc]
        def __init__(self, context: ValidationContext) -> None:
            report = context.report_error

            def coded(error: GraphQLError) -> None:
                extensions = {"code": LIMIT_EXCEEDED}
                report(GraphQLError(error.message, error.nodes, extensions=extensions))

            context.report_error = coded  # type: ignore[method-assign]
            try:
                super().__init__(context)
            finally:
                del context.report_error

    return Coded


_RULES = [
    _coded(rule)
    for rule in (
        *QueryDepthLimiter(max_depth=MAX_DEPTH).validation_rules,
        *MaxAliasesLimiter(max_alias_count=MAX_ALIASES).validation_rules,
    )
]


def over_token_limit(error: GraphQLError) -> bool:
    """Whether a syntax error is the token limit's: the document has more tokens
    than the limit (counted here, up to one past it)."""
    if not isinstance(error, GraphQLSyntaxError) or error.source is None:
        return False
    lexer = Lexer(Source(error.source.body))
    try:
        for _ in range(MAX_TOKENS + 1):
            if lexer.advance().kind == TokenKind.EOF:
                return False
    except GraphQLSyntaxError:
        return False
    return True


class SizeLimits(AddValidationRules):
    def __init__(self) -> None:
        super().__init__(_RULES)


class TokenLimit(MaxTokensLimiter):
    def __init__(self) -> None:
        super().__init__(max_token_count=MAX_TOKENS)


class Parsed(ParserCache):
    def __init__(self) -> None:
        super().__init__(maxsize=CACHE_SIZE)


class Validated(ValidationCache):
    """Validation (cached), after a check that fragments do not expand the document
    exponentially: `fragment A { ...B ...B } fragment B { ...C ...C }` doubles per
    line, and the depth and alias rules expand fragments without memory of them."""

    def __init__(self) -> None:
        super().__init__(maxsize=CACHE_SIZE)

    def on_validate(self) -> Iterator[None]:
        # errors set before the hook yields: Strawberry then skips its own validation
        context = self.execution_context
        document = context.graphql_document
        assert document is not None
        fields = expanded_fields(document)
        if fields > MAX_FIELDS:
            context.pre_execution_errors = [
                limit_error(
                    f"the document expands to {fields} fields with its fragments; "
                    f"at most {MAX_FIELDS}",
                    {"fields": fields, "max": MAX_FIELDS},
                )
            ]
            yield
            return
        schema = context.schema._schema
        errors = self.cached_validate_document(schema, document, context.validation_rules)
        if not errors:
            nodes = estimated_nodes(schema, document, context.operation_name, context.variables)
            if nodes > MAX_NODES:
                errors = [
                    limit_error(
                        f"the query would answer an estimated {nodes} nodes; at most "
                        f"{MAX_NODES} (ask for smaller pages: `first` multiplies along lists)",
                        {"nodes": nodes, "max": MAX_NODES},
                    )
                ]
        context.pre_execution_errors = errors
        yield


def expanded_fields(document: DocumentNode) -> int:
    """How many fields the operations hold with every fragment spread expanded
    (linear time: each fragment's size is computed once)."""
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    sizes: dict[str, int] = {}

    def fragment(name: str) -> int:
        if name not in sizes:
            sizes[name] = 0  # a cycle (refused by validation) adds nothing here
            found = fragments.get(name)
            sizes[name] = count(found.selection_set) if found else 0
        return sizes[name]

    def count(selection_set: SelectionSetNode | None) -> int:
        total = 0
        for selection in selection_set.selections if selection_set else ():
            if isinstance(selection, FieldNode):
                total += 1 + count(selection.selection_set)
            elif isinstance(selection, InlineFragmentNode):
                total += count(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                total += fragment(selection.name.value)
        return total

    return sum(
        count(d.selection_set)
        for d in document.definitions
        if isinstance(d, OperationDefinitionNode)
    )


def estimated_nodes(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation_name: str | None,
    variables: dict[str, Any] | None,
) -> int:
    """The list items an operation of a valid document would answer, at most (see above)."""
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    operation = next(
        (o for o in operations if operation_name in (None, o.name and o.name.value)), None
    )
    if operation is None:
        return 0
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    values = dict(variables or {})
    for definition in operation.variable_definitions or ():
        default = definition.default_value
        if definition.variable.name.value not in values and isinstance(default, IntValueNode):
            values[definition.variable.name.value] = int(default.value)
    root = schema.get_root_type(operation.operation)
    assert root is not None

    def first(field: FieldNode) -> int:
        argument = next((a for a in field.arguments or () if a.name.value == "first"), None)
        value: Any = DEFAULT_FIRST
        if argument is not None and isinstance(argument.value, IntValueNode):
            value = int(argument.value.value)
        elif argument is not None and isinstance(argument.value, VariableNode):
            value = values.get(argument.value.name.value, DEFAULT_FIRST)
        return value if isinstance(value, int) and value > 0 else DEFAULT_FIRST

    def count(selections: SelectionSetNode | None, parent: Any, many: int) -> int:
        """Items of the lists selected under `selections`, `many` times over."""
        total = 0
        for selection in selections.selections if selections else ():
            if isinstance(selection, FieldNode):
                if selection.selection_set is None or selection.name.value.startswith("__"):
                    continue  # a scalar, or introspection
                definition = parent.fields[selection.name.value]
                kind = definition.type
                kind = kind.of_type if isinstance(kind, GraphQLNonNull) else kind
                items = many
                if "first" in definition.args:  # a connection: its edges are `first` items
                    items = many * first(selection)
                elif isinstance(kind, GraphQLList):
                    # a connection's edges were counted by `first`, on the connection
                    paged = parent.name.endswith("Connection")
                    items = many if paged else many * UNPAGED_LIST_ESTIMATE
                    total += items
                child = get_named_type(kind)
                total += count(selection.selection_set, child, items)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                child = schema.get_type(condition.name.value) if condition else parent
                total += count(selection.selection_set, child, many)
            elif isinstance(selection, FragmentSpreadNode):
                fragment = fragments[selection.name.value]
                child = schema.get_type(fragment.type_condition.name.value)
                total += count(fragment.selection_set, child, many)
        return total

    return count(operation.selection_set, root, 1)


class PrivateSchema(SchemaExtension):
    """No introspection when the server's schema is not public (INFRAGRAPH_PUBLIC_SCHEMA=0).

    Decided per request from the context's settings: one schema serves both ways.
    """

    def on_operation(self) -> Iterator[None]:
        settings = getattr(self.execution_context.context, "settings", None)
        if settings is not None and not settings.public_schema:
            self.execution_context.validation_rules += (NoSchemaIntrospectionCustomRule,)
        yield


EXTENSIONS: list[type[SchemaExtension]] = [
    TokenLimit,
    SizeLimits,
    PrivateSchema,
    Parsed,
    Validated,
]
