"""What a query selects below the field being resolved, with each field's arguments as its
resolver will get them (coerced, variables and defaults applied): so a list resolver can load,
for all its items at once, what their own fields will ask for."""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from graphql import (
    FieldNode,
    FragmentSpreadNode,
    GraphQLField,
    GraphQLInterfaceType,
    GraphQLNamedType,
    GraphQLObjectType,
    GraphQLResolveInfo,
    InlineFragmentNode,
    NamedTypeNode,
    SelectionSetNode,
    get_named_type,
)
from graphql.execution.values import VariableValues, get_argument_values

from app.api.context import Info


@dataclass(frozen=True)
class Selected:
    """One field node of the query, in the type it is selected on."""

    raw: GraphQLResolveInfo[Any]
    node: FieldNode
    definition: GraphQLField | None  # None for the field being resolved (its args are known)
    type: GraphQLNamedType  # the field's type, lists and non-null unwrapped

    @property
    def name(self) -> str:
        return self.node.name.value

    @cached_property
    def arguments(self) -> dict[str, Any]:
        """By GraphQL name; raises GraphQLError for a bad value (validation refuses those)."""
        if self.definition is None:
            return {}
        variables: VariableValues | dict[str, Any] = self.raw.variable_values
        if isinstance(variables, dict):  # what Strawberry's execution hands resolvers
            variables = VariableValues(sources={}, coerced=variables)
        return get_argument_values(self.definition, self.node, variables)


def selected_here(info: Info) -> list[Selected]:
    """The field being resolved (a node per time the query selects it)."""
    raw = info._raw_info
    return [Selected(raw, node, None, get_named_type(raw.return_type)) for node in raw.field_nodes]


def selected_below(info: Info, path: tuple[str, ...]) -> list[Selected]:
    """The fields selected at `path` (field names) below the field being resolved."""
    return descend(selected_here(info), path)


def descend(level: list[Selected], path: tuple[str, ...]) -> list[Selected]:
    """The fields selected at `path` below the fields `level`."""
    for name in path:
        level = [field for field in _children(level) if field.name == name]
    return _children(level)


def _children(level: Iterable[Selected]) -> list[Selected]:
    children = []
    for parent in level:
        for node, in_type in _fields(parent.raw, parent.node.selection_set, parent.type):
            definition = in_type.fields.get(node.name.value)
            if definition is not None:
                children.append(
                    Selected(parent.raw, node, definition, get_named_type(definition.type))
                )
    return children


def _fields(
    raw: GraphQLResolveInfo[Any], selection_set: SelectionSetNode | None, in_type: GraphQLNamedType
) -> Iterator[tuple[FieldNode, GraphQLObjectType | GraphQLInterfaceType]]:
    """Field nodes with the type they are selected on, through fragments (validation has
    refused fragment cycles, and limits.py documents that expand too much)."""
    for selection in selection_set.selections if selection_set else ():
        if isinstance(selection, FieldNode):
            if isinstance(in_type, GraphQLObjectType | GraphQLInterfaceType):
                yield selection, in_type
            continue
        condition: NamedTypeNode | None
        if isinstance(selection, FragmentSpreadNode):
            fragment = raw.fragments.get(selection.name.value)
            if fragment is None:
                continue
            condition, selections = fragment.type_condition, fragment.selection_set
        elif isinstance(selection, InlineFragmentNode):
            condition, selections = selection.type_condition, selection.selection_set
        else:
            continue
        narrowed = raw.schema.get_type(condition.name.value) if condition else in_type
        yield from _fields(raw, selections, narrowed or in_type)
