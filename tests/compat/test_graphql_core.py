"""graphql-core internals app/api/runtime/execution.py, lookahead.py and limits.py rely on:
the executor's methods it overrides or calls, FieldDetailsList, argument values."""

from typing import Any

from graphql import GraphQLObjectType, build_schema, parse
from graphql.execution import execute

from tests.helpers.compat_hooks import attribute, parameters, require

EXECUTOR = "strawberry.schema.schema:StrawberryGraphQLCoreExecutionContext"


def test_the_executor_methods_the_fast_path_overrides_take_what_it_passes() -> None:
    parameters(
        f"{EXECUTOR}.execute_field",
        ["parent_type", "source", "field_details_list", "path", "position_context"],
    )
    parameters(
        f"{EXECUTOR}.complete_iterable_value",
        ["item_type", "field_details_list", "info", "path", "items", "position_context"],
    )
    parameters(
        f"{EXECUTOR}.collect_and_execute_subfields",
        ["return_type", "field_details_list", "path", "result", "position_context"],
    )
    parameters(f"{EXECUTOR}.collect_subfields", ["return_type", "field_details_list"])
    parameters(f"{EXECUTOR}.get_stream_usage", ["field_details_list", "path"])
    parameters(f"{EXECUTOR}.build_response", ["data"])
    attribute("graphql.execution.collect_fields:FieldDetailsList")


def test_the_executor_calls_the_hooks_as_the_fast_path_expects() -> None:
    executor: Any = attribute(EXECUTOR).__mro__[1]  # graphql-core's own executor
    seen: dict[str, Any] = {}

    class Spy(executor):  # type: ignore[misc, valid-type]
        def execute_field(self, parent_type, source, field_details_list, path, position_context):  # type: ignore[no-untyped-def]
            seen.setdefault("middleware_manager", hasattr(self, "middleware_manager"))
            seen.setdefault("context_value", hasattr(self, "context_value"))
            details = field_details_list[0]
            seen.setdefault("node", details.node.name.value)
            seen.setdefault("defer_usage", hasattr(details, "defer_usage"))
            return super().execute_field(
                parent_type, source, field_details_list, path, position_context
            )

        def complete_iterable_value(  # type: ignore[no-untyped-def]
            self, item_type, field_details_list, info, path, items, position_context
        ):
            collected = self.collect_subfields(item_type.of_type, field_details_list)
            seen["collected"] = collected
            seen["stream"] = self.get_stream_usage(field_details_list, path)
            return super().complete_iterable_value(
                item_type, field_details_list, info, path, items, position_context
            )

        def build_response(self, data):  # type: ignore[no-untyped-def]
            seen["data"] = data
            return super().build_response(data)

    schema = build_schema("type Query { items: [Item!]! } type Item { name: String! }")
    root = {"items": [{"name": "a"}, {"name": "b"}]}
    result: Any = execute(schema, parse("{ items { name } }"), root, executor_class=Spy)
    require(result.data == {"items": [{"name": "a"}, {"name": "b"}]}, "execute", str(result))
    for hook in ("middleware_manager", "context_value", "defer_usage"):
        require(seen.get(hook), f"Executor.{hook}", "no longer there")
    require(seen.get("node") == "items", "FieldDetails.node", f"gave {seen.get('node')}")
    collected = seen.get("collected")
    require(
        isinstance(collected, tuple) and len(collected) == 3 and "name" in collected[0],
        "Executor.collect_subfields",
        f"returns {collected!r}, not (grouped fields, deferred, _)",
    )
    require(seen.get("stream") is None, "Executor.get_stream_usage", "not None unstreamed")
    require("data" in seen, "Executor.build_response", "not called")


def test_argument_values_from_coerced_variables() -> None:
    get_argument_values = attribute("graphql.execution.values:get_argument_values")
    variable_values = attribute("graphql.execution.values:VariableValues")
    schema = build_schema("type Query { page(first: Int): Int }")
    query_type: GraphQLObjectType = schema.query_type  # type: ignore[assignment]
    node: Any = parse("query ($n: Int) { page(first: $n) }").definitions[0]
    field_node = node.selection_set.selections[0]
    variables = variable_values(sources={}, coerced={"n": 7})
    found = get_argument_values(query_type.fields["page"], field_node, variables)
    require(found == {"first": 7}, "graphql.execution.values.get_argument_values", str(found))
