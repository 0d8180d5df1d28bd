"""The fast path for plain fields and lists of plain objects answers exactly as
graphql-core does: the same data, the same errors at the same paths (a null where none
is allowed, a value that does not coerce, an object of another type), with and without
it; and a finished execution lets go of the request's context."""

import enum
import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
import strawberry
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from app.api.runtime.execution import PlainFieldsExecutionContext, _plain, _TypeOf
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
class Pair:
    label: str
    leaf: Leaf


@strawberry.type
class Holder:
    leaf: Leaf
    optional: Leaf | None
    leaves: list[Leaf]
    maybe_leaves: list[Leaf | None] = strawberry.field(default_factory=list)
    pairs: list[Pair] = strawberry.field(default_factory=list)


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
    # an Int past 32 bits, as a leaf and in a list
    "bad_int_range": Holder(leaf=_leaf(count=2**31), optional=None, leaves=[]),
    "bad_int_in_list": Holder(
        leaf=_leaf(scores=[2**31 - 1, -(2**31) - 1]), optional=None, leaves=[]
    ),
    # an object of another type where a Leaf belongs, nullable and not
    "wrong_type": Holder(leaf=_leaf(), optional="no", leaves=[]),  # type: ignore[arg-type]
    "wrong_required": Holder(leaf=Holder, optional=None, leaves=[]),  # type: ignore[arg-type]
    # lists of objects: items null where allowed, a tuple, objects below items
    "lists": Holder(
        leaf=_leaf(),
        optional=None,
        leaves=(_leaf(name="b"), _leaf(name="c", scores=None)),  # type: ignore[arg-type]
        maybe_leaves=[None, _leaf()],
        pairs=[Pair(label="p", leaf=_leaf()), Pair(label="q", leaf=_leaf(tags=[]))],
    ),
    # values graphql-core coerces (a bool for an Int, an int for a String), Ints at the edges
    "coerced": Holder(
        leaf=_leaf(count=True, maybe=5, scores=[-(2**31), 2**31 - 1, False]),
        optional=None,
        leaves=[_leaf(count=2**31 - 1, tags=[1, "x"])],
    ),
    # an item's value that does not coerce; a null item, or an object of another type
    "item_bad_int": Holder(leaf=_leaf(), optional=None, leaves=[_leaf(), _leaf(count=1.5)]),
    "item_null": Holder(leaf=_leaf(), optional=None, leaves=[_leaf(), None]),  # type: ignore[list-item]
    "item_wrong_type": Holder(
        leaf=_leaf(),
        optional=None,
        leaves=[],
        maybe_leaves=[_leaf(), "no"],  # type: ignore[list-item]
    ),
    # below an item: a null leaf, a null object, an enum that does not coerce
    "item_null_leaf": Holder(
        leaf=_leaf(),
        optional=None,
        leaves=[],
        pairs=[Pair(label=None, leaf=_leaf())],  # type: ignore[arg-type]
    ),
    "item_null_object": Holder(
        leaf=_leaf(),
        optional=None,
        leaves=[],
        pairs=[Pair(label="p", leaf=None)],  # type: ignore[arg-type]
    ),
    "item_bad_enum": Holder(
        leaf=_leaf(), optional=None, leaves=[], pairs=[Pair(label="p", leaf=_leaf(colour="x"))]
    ),
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
# Lists of objects: aliases, fragments, __typename, @include and @skip, enums, nullable
# items, objects below items; and a list whose items select a resolver (`shout`).
LISTS = """query($name: String!, $yes: Boolean!) { holder(name: $name) {
  leaves { __typename n: name count colour scores ...more
           skipped: name @skip(if: $yes) tags @include(if: $yes) }
  maybeLeaves { name maybe ... on Leaf { count } }
  pairs { label leaf { name colour tags } again: leaf { count } }
  shouting: leaves { name shout }
} }
fragment more on Leaf { __typename first: tags }"""


def _run(
    context: type, name: str, query: str = QUERY, yes: bool = True
) -> tuple[Any, list[tuple[str, Any]]]:
    schema = strawberry.Schema(query=Query, execution_context_class=context)
    result = schema.execute_sync(query, variable_values={"name": name, "yes": yes})
    errors = sorted((e.message, e.path) for e in result.errors or [])
    return result.data, errors


CASES = [
    pytest.param(query, name, yes, id=f"{label}-{name}-{yes}")
    for label, query in (("fields", QUERY), ("lists", LISTS))
    for name in sorted(HOLDERS)
    for yes in (True, False)
    if query is LISTS or yes
]


@pytest.mark.parametrize(("query", "name", "yes"), CASES)
def test_the_fast_path_answers_as_graphql_core_does(query: str, name: str, yes: bool) -> None:
    fast = _run(PlainFieldsExecutionContext, name, query, yes)
    assert fast == _run(StrawberryGraphQLCoreExecutionContext, name, query, yes)
    if (query is LISTS) == (name == "lists" or name.startswith("item_")):  # its own query
        assert bool(fast[1]) == (name not in ("fine", "lists", "coerced"))  # as it says


class _Counting(PlainFieldsExecutionContext):
    """Counts the list items graphql-core completes itself."""

    items = 0

    def complete_list_item_value(self, *args: Any, **kwargs: Any) -> bool:
        _Counting.items += 1
        return super().complete_list_item_value(*args, **kwargs)


@pytest.fixture
def counted() -> Iterator[type[_Counting]]:
    _Counting.items = 0
    yield _Counting


def test_a_plain_list_is_completed_without_graphql_core_per_item(
    counted: type[_Counting],
) -> None:
    query = "query($name: String!) { holder(name: $name) { leaves { name tags } } }"
    assert _run(counted, "lists", query)[0] == {
        "holder": {"leaves": [{"name": "b", "tags": ["x", "y"]}, {"name": "c", "tags": ["x", "y"]}]}
    }
    assert counted.items == 0
    _run(counted, "item_bad_int", query.replace("tags", "count"))  # refused: graphql-core's
    assert counted.items == 2


def test_a_finished_execution_lets_go_of_its_context() -> None:
    """graphql-core's executor is a reference cycle: the context (a request's loaded rows)
    goes with the response, not at the next garbage collection."""

    class Loaded:
        pass

    schema = strawberry.Schema(query=Query, execution_context_class=PlainFieldsExecutionContext)
    context = Loaded()
    gone = weakref.ref(context)
    gc.disable()
    try:
        result = schema.execute_sync(QUERY, variable_values={"name": "fine"}, context_value=context)
        assert result.errors is None
        del context, result
        assert gone() is None
    finally:
        gc.enable()


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


@strawberry.interface
class Named:
    name: str


@strawberry.type
class Cat(Named):
    pass


@strawberry.type
class Dog(Named):
    pass


@strawberry.type
class Pets:
    @strawberry.field
    def cats(self) -> list[Cat]:
        # a Cat, a Dog cast as a Cat, a Cat cast as a Dog, a Cat again
        return [
            Cat(name="a"),
            strawberry.cast(Cat, Dog(name="b")),
            strawberry.cast(Dog, Cat(name="c")),
            Cat(name="d"),
        ]


class _Other:
    name = "o"


def test_a_class_once_accepted_is_checked_again_when_cast() -> None:
    """The compiled completion asks a type's is_type_of once per class: a value cast to
    another type (strawberry.cast) is still refused as graphql-core refuses it, and one
    cast to this type accepted."""
    schema = strawberry.Schema(query=Pets, types=[Cat, Dog])
    is_type_of = schema._schema.get_type("Cat").is_type_of  # type: ignore[union-attr]
    check = _TypeOf(is_type_of)
    values = [
        *Pets().cats(),
        strawberry.cast(Dog, Dog(name="e")),
        strawberry.cast(Cat, _Other()),
        _Other(),  # of a class accepted only when cast
        Cat(name="f"),
    ]
    expected = [is_type_of(v, None) is True for v in values]
    assert expected == [True, True, False, True, False, True, False, True]
    assert [check(v) for v in values] == expected
    query = "{ cats { name } }"
    fast = strawberry.Schema(
        query=Pets, types=[Cat, Dog], execution_context_class=PlainFieldsExecutionContext
    ).execute_sync(query)
    core = schema.execute_sync(query)
    assert (fast.data, [e.message for e in fast.errors or []]) == (
        core.data,
        [e.message for e in core.errors or []],
    )
    assert core.errors  # the Cat cast as a Dog
