"""The fast path for plain fields answers exactly as graphql-core does: the same data,
the same errors at the same paths (a null where none is allowed, a value that does
not coerce, an object of another type), with and without it."""

import enum
from typing import Any

import pytest
import strawberry
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from app.api.execution import PlainFieldsExecutionContext, _plain
from app.api.schema import schema as app_schema


@strawberry.enum
class Colour(enum.Enum):
    RED = "red"


@strawberry.type
class Leaf:
    name: str
    maybe: str | None
    count: int
    colour: Colour
    tags: list[str]
    scores: list[int | None] | None

    @strawberry.field
    def shout(self) -> str:
        return self.name.upper()


@strawberry.type
class Holder:
    leaf: Leaf
    optional: Leaf | None
    leaves: list[Leaf]


def _leaf(**changes: Any) -> Leaf:
    fields: dict[str, Any] = {
        "name": "a",
        "maybe": None,
        "count": 1,
        "colour": Colour.RED,
        "tags": ["x", "y"],
        "scores": [1, None],
    }
    return Leaf(**(fields | changes))


HOLDERS: dict[str, Holder] = {
    "fine": Holder(leaf=_leaf(), optional=None, leaves=[_leaf(name="b"), _leaf(name="c")]),
    # a null in a non-null leaf, a list item, and an object
    "null_leaf": Holder(leaf=_leaf(name=None), optional=_leaf(), leaves=[]),
    "null_item": Holder(leaf=_leaf(tags=["x", None]), optional=None, leaves=[]),
    "null_object": Holder(leaf=None, optional=_leaf(), leaves=[_leaf()]),  # type: ignore[arg-type]
    # values that do not coerce: a float for an Int, a string for an enum, a scalar list
    "bad_int": Holder(leaf=_leaf(count=1.5), optional=None, leaves=[]),
    "bad_enum": Holder(leaf=_leaf(colour="blue"), optional=None, leaves=[]),
    "bad_list": Holder(leaf=_leaf(tags="xy"), optional=None, leaves=[]),
    # an object of another type where a Leaf belongs, nullable and not
    "wrong_type": Holder(leaf=_leaf(), optional="no", leaves=[]),  # type: ignore[arg-type]
    "wrong_required": Holder(leaf=Holder, optional=None, leaves=[]),  # type: ignore[arg-type]
}


@strawberry.type
class Query:
    @strawberry.field
    def holder(self, name: str) -> Holder:
        return HOLDERS[name]


QUERY = """query($name: String!) { holder(name: $name) {
  __typename
  leaf { name maybe count colour tags scores shout alias: name ...more }
  optional { name count }
  leaves { name ... on Leaf { tags } }
} }
fragment more on Leaf { __typename first: tags }"""


def _run(context: type, name: str) -> tuple[Any, list[tuple[str, Any]]]:
    schema = strawberry.Schema(query=Query, execution_context_class=context)
    result = schema.execute_sync(QUERY, variable_values={"name": name})
    errors = sorted((e.message, e.path) for e in result.errors or [])
    return result.data, errors


@pytest.mark.parametrize("name", sorted(HOLDERS))
def test_the_fast_path_answers_as_graphql_core_does(name: str) -> None:
    fast = _run(PlainFieldsExecutionContext, name)
    assert fast == _run(StrawberryGraphQLCoreExecutionContext, name)
    assert bool(fast[1]) == (name != "fine")  # the cases are what they say


def test_the_app_schema_executes_with_it() -> None:
    assert app_schema.execution_context_class is PlainFieldsExecutionContext


def test_plain_fields_are_the_attributes_of_leaf_or_non_null_object_types() -> None:
    schema = strawberry.Schema(query=Query)
    types = {name: schema._schema.get_type(name) for name in ("Leaf", "Holder")}
    plain = {
        (name, field)
        for name, graphql_type in types.items()
        for field, definition in graphql_type.fields.items()  # type: ignore[union-attr]
        if _plain(definition)
    }
    # not `shout` (a resolver), `optional` (a nullable object), `leaves` (a list of them)
    assert plain == {
        *(("Leaf", f) for f in ("name", "maybe", "count", "colour", "tags", "scores")),
        ("Holder", "leaf"),
    }
