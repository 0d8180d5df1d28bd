"""Strawberry internals the API relies on: the GraphQL core schema behind a Schema
(`_schema`), a resolver's raw info (`_raw_info`), a field's definition back-reference,
PreExecutionError, StreamResult, and the HTTP view's hooks app/api/app.py overrides."""

from typing import Any

import strawberry
from graphql import GraphQLSchema, specified_rules
from graphql import parse as parse_document

from app.api.runtime.limits import Validated
from app.api.schema import schema as app_schema
from tests.helpers.compat_hooks import attribute, parameters, require


def test_the_core_schema_and_field_definitions() -> None:
    core = getattr(app_schema, "_schema", None)
    require(isinstance(core, GraphQLSchema), "strawberry.Schema._schema", f"is {type(core)}")
    backref = attribute(
        "strawberry.schema.schema_converter:GraphQLCoreConverter.DEFINITION_BACKREF"
    )
    field = core.query_type.fields["states"]  # type: ignore[union-attr]
    definition = field.extensions.get(backref)
    require(
        isinstance(definition, attribute("strawberry.types.field:StrawberryField")),
        "GraphQLCoreConverter.DEFINITION_BACKREF",
        f"the field's extensions hold {definition!r}",
    )
    attribute("strawberry.schema.schema:StreamResult")


async def test_a_resolver_reads_the_raw_info() -> None:
    seen: list[Any] = []

    @strawberry.type
    class Query:
        @strawberry.field
        def here(self, info: strawberry.Info) -> int:
            seen.append(getattr(info, "_raw_info", None))
            return 1

    result = await strawberry.Schema(Query).execute("{ here }")
    require(result.data == {"here": 1}, "strawberry.Schema.execute", str(result))
    # what app/api/runtime/lookahead.py reads of it
    for name in ("field_nodes", "return_type", "variable_values", "fragments", "schema"):
        require(hasattr(seen[0], name), "strawberry.Info._raw_info", f"has no {name}")
    require(isinstance(seen[0].schema, GraphQLSchema), "GraphQLResolveInfo.schema", "moved")


async def test_a_request_error_is_a_pre_execution_error() -> None:
    pre_execution_error = attribute("strawberry.types.execution:PreExecutionError")
    for query in ("{ nope", "{ nope }"):
        result = await app_schema.execute(query)
        require(
            isinstance(result, pre_execution_error),
            "strawberry PreExecutionError",
            f"{query!r} gave {type(result).__name__}",
        )


def test_the_http_view_hooks() -> None:
    view = "strawberry.asgi:GraphQL"
    parameters(f"{view}.process_result", ["request", "result"])
    parameters(f"{view}.get_sub_response", ["request"])
    parameters(f"{view}.create_response", ["response_data", "sub_response"])
    parameters(f"{view}.parse_json", ["data"])
    parameters(f"{view}.encode_json", ["data"])
    parameters(f"{view}.should_render_graphql_ide", ["request"])
    parameters(f"{view}.on_ws_connect", ["context"])
    attribute("strawberry.asgi:ASGIWebSocketAdapter.send_json")


async def test_validation_runs_once_through_our_cached_hook() -> None:
    """app/api/runtime/limits.py's Validated sets `pre_execution_errors` in `on_validate`
    before yielding, through ValidationCache's `cached_validate_document`, and
    Strawberry then skips its own validation."""
    validated = Validated()
    cached = getattr(validated, "cached_validate_document", None)
    require(callable(cached), "ValidationCache.cached_validate_document", "gone")
    core: GraphQLSchema = app_schema._schema
    errors = cached(core, parse_document("{ nope }"), tuple(specified_rules))  # type: ignore[misc]
    require(len(errors) == 1, "ValidationCache.cached_validate_document", f"gave {errors}")
    result = await app_schema.execute("{ nope }")
    require(
        result.errors is not None and len(result.errors) == 1,
        "ExecutionContext.pre_execution_errors",
        f"validation ran other than once: {result.errors}",
    )
