"""What app/api/graph/columns.py relies on: a Strawberry field whose dataclass field is
kept out of the constructor (`init` False, as Strawberry does for a field with a
resolver) is still a basic field, read by getattr, so a property of a base class answers
it, and the plain-field execution (app/api/runtime/execution.py) reads it too."""

from typing import Any

import strawberry
from graphql import GraphQLSchema

from app.api.graph.columns import row_field
from app.api.runtime.execution import PlainFieldsExecutionContext
from tests.helpers.compat_hooks import require


class _Answers:
    @property
    def answered(self) -> Any:
        return "by the property"


@strawberry.type(name="RowFields")
class _Object(_Answers):
    plain: str
    answered: str = row_field("Answered by a property of a base class.")


@strawberry.type
class _Query:
    @strawberry.field
    def found(self) -> _Object:
        return _Object(plain="set")


async def test_a_field_out_of_the_constructor_is_read_by_getattr() -> None:
    schema = strawberry.Schema(_Query, execution_context_class=PlainFieldsExecutionContext)
    result = await schema.execute("{ found { plain answered } }")
    require(
        result.data == {"found": {"plain": "set", "answered": "by the property"}},
        "dataclasses' init=False on a StrawberryField",
        str(result),
    )
    core = getattr(schema, "_schema", None)
    require(isinstance(core, GraphQLSchema), "strawberry.Schema._schema", f"is {type(core)}")
    field = core.get_type("RowFields").fields["answered"]  # type: ignore[union-attr]
    require(
        getattr(field.resolve, "_is_default", False),
        "StrawberryField.is_basic_field",
        "a field kept out of the constructor is no longer basic (resolved by getattr)",
    )
