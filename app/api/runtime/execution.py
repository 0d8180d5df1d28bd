"""GraphQL execution with a fast path for plain fields and lists of plain objects.

graphql-core executes every field the same way: it builds a resolve info (a tuple
of a dozen values), calls the resolver, checks for an awaitable and dispatches on
the field's type; every item of a list gets a path, a completion and the same
checks again. A page of a thousand resources selects thousands of fields
(address, depth, a path's strings, the node and resource objects), each an
attribute of an object already built: that bookkeeping, not the data, was most of
a page's time (docs/performance.md has the figures).

A field Strawberry marks basic (an attribute: no resolver, no extensions), with no
arguments and no middleware around it, is plain: it is read here directly when it
is a scalar or enum (or a list of them), coerced as graphql-core would; or a
non-null object. An object whose selected fields (through fragments, aliases,
@include and @skip, as graphql-core collects them) are all plain, or __typename, is
completed by one function compiled per (object type, selection), objects below it
too; so is each item of a list of such objects. Anything else goes through
graphql-core, and so does any value the fast path does not take as it is (null
where not allowed, a value that does not coerce, an object of another type):
reading attributes has no side effects, so graphql-core completes the field (or the
whole list) again and reports the error as usual, at its path.
"""

import functools
import keyword
import types
from collections.abc import Callable, Iterable
from typing import Any

from graphql import (
    GraphQLBoolean,
    GraphQLEnumType,
    GraphQLError,
    GraphQLField,
    GraphQLID,
    GraphQLInt,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLResolveInfo,
    GraphQLScalarType,
    GraphQLString,
    Undefined,
    get_named_type,
)
from graphql.execution.collect_fields import FieldDetailsList
from graphql.pyutils import AwaitableOrValue, Path
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.cast import TYPE_CAST_ATTRIBUTE
from strawberry.types.field import StrawberryField

from app.api import cost

_LEAVES = (GraphQLScalarType, GraphQLEnumType)
_REFUSED: Any = object()  # a value the fast path does not take: graphql-core completes it
# A value to its completed value (what graphql-core would give), or _REFUSED.
Complete = Callable[[Any], Any]
# graphql-core's scalars that give a value of exactly this Python type back as it is
# (Int: within 32 bits).
_AS_IS = ((GraphQLString, str), (GraphQLID, str), (GraphQLBoolean, bool), (GraphQLInt, int))
_INT = range(-(2**31), 2**31)
_CAST = TYPE_CAST_ATTRIBUTE  # strawberry.cast marks a value with it


def _as_is(type_: GraphQLOutputType) -> type | None:
    return next((kind for scalar, kind in _AS_IS if scalar is type_), None)


def _leaf_completion(type_: GraphQLOutputType, *, nullable: bool = True) -> Complete | None:
    """How to complete a value of `type_`, a leaf or a list of leaves (non-null or not),
    as graphql-core would; None for any other type."""
    if isinstance(type_, GraphQLNonNull):
        return _leaf_completion(type_.of_type, nullable=False)
    absent = None if nullable else _REFUSED  # what a null value completes to
    if isinstance(type_, GraphQLList):
        item = _leaf_completion(type_.of_type)
        if item is None:
            return None
        of = type_.of_type
        # items all of the scalar's own type (not null) are theirs as they are (ints are
        # each checked for their range)
        kind = _as_is(of.of_type) if isinstance(of, GraphQLNonNull) else None
        same = {kind if kind is not int else None}

        def items(value: Any) -> Any:
            if value is None:
                return absent
            if not isinstance(value, list | tuple):
                return _REFUSED
            if set(map(type, value)) <= same:  # a list is its own completion (no copy)
                return value if type(value) is list else list(value)
            completed = [item(one) for one in value]
            return _REFUSED if any(one is _REFUSED for one in completed) else completed

        items.strings = kind is str  # type: ignore[attr-defined]  # what _metered tests
        return items
    if isinstance(type_, _LEAVES):
        leaf, kind = type_, _as_is(type_)

        def scalar(value: Any) -> Any:
            if type(value) is kind and (kind is not int or value in _INT):
                return value
            if value is None:
                return absent
            try:
                coerced = leaf.coerce_output_value(value)
            except Exception:  # graphql-core reports it, at its path
                return _REFUSED
            return _REFUSED if coerced is None or coerced is Undefined else coerced

        scalar.as_is = kind  # type: ignore[attr-defined]  # what _compiled tests inline
        return scalar
    return None


def _object_completion(
    object_type: GraphQLObjectType, fields: list[tuple[str, str, Complete]]
) -> Complete:
    """An object of `object_type` (not null) to its result: each of `fields` (response
    name, attribute, its completion) in the order given. Compiled to one function (see
    `_compiled`) when every attribute is a plain name, else a loop over the fields."""
    if all(_compilable(attribute) for _, attribute, _ in fields):
        return _compiled(object_type, fields)
    is_type_of = object_type.is_type_of

    def complete(value: Any) -> Any:
        # Strawberry's is_type_of does not read its info
        if value is None or (is_type_of is not None and is_type_of(value, None) is not True):  # type: ignore[arg-type]
            return _REFUSED
        result = {}
        try:
            for name, attribute, field in fields:
                completed = field(getattr(value, attribute))
                if completed is _REFUSED:
                    return _REFUSED
                result[name] = completed
        except Exception:  # graphql-core reads it again and reports it, at its path
            return _REFUSED
        return result

    return complete


def _compilable(attribute: str) -> bool:
    return attribute.isidentifier() and not keyword.iskeyword(attribute)


# An Int within 32 bits, as graphql-core's Int takes it as it is (range(...) checked by
# `in` costs a call; a chained comparison does not).
_IN_INT = "type({v}) is int and -2147483648 <= {v} < 2147483648"


def _compiled(object_type: GraphQLObjectType, fields: list[tuple[str, str, Complete]]) -> Complete:
    """The loop of `_object_completion` unrolled into the source of one function: each
    field read as an attribute, a leaf taken as it is when of its scalar's own type (the
    test `scalar` makes first, inline), else completed by its function; the result one
    dict display. Names in the source are GraphQL response names (as literals) and
    Python identifiers: nothing else of the query or schema is in it."""
    scope: dict[str, Any] = {"R": _REFUSED}
    body = ["def complete(value):", "    if value is None:", "        return R"]
    if object_type.is_type_of is not None:
        scope["is_type_of"] = _TypeOf(object_type.is_type_of)
        body += ["    if not is_type_of(value):", "        return R"]
    body.append("    try:")
    for i, (_, attribute, field) in enumerate(fields):
        v, f = f"v{i}", f"f{i}"
        scope[f] = field
        if isinstance(field, _Constant):
            scope[v] = field.value
            continue
        body.append(f"        {v} = value.{attribute}")
        kind = getattr(field, "as_is", None)
        if kind is int:
            taken = _IN_INT.format(v=v)
        elif kind is not None:
            scope[f"k{i}"] = kind
            taken = f"type({v}) is k{i}"
        else:
            body += [f"        {v} = {f}({v})", f"        if {v} is R:", "            return R"]
            continue
        body += [
            f"        if not ({taken}):",
            f"            {v} = {f}({v})",
            f"            if {v} is R:",
            "                return R",
        ]
    body += ["    except Exception:", "        return R"]
    items = ", ".join(f"{name!r}: v{i}" for i, (name, _, _) in enumerate(fields))
    body.append(f"    return {{{items}}}")
    exec(_code("\n".join(body)), scope)  # the source is ours (see above)
    complete: Complete = scope["complete"]
    return complete


class _TypeOf:
    """An object type's is_type_of (Strawberry's, which does not read its info), once per
    class of the values it accepts: Strawberry's answers by the value's class (isinstance,
    its definition) unless the value is cast (`strawberry.cast`: an attribute, on the
    instance or its class), so a class it accepted, uncast, is accepted again without
    asking (a page of a thousand resources asks once)."""

    __slots__ = ("accepted", "is_type_of")

    def __init__(self, is_type_of: Callable[[Any, Any], Any]) -> None:
        self.is_type_of = is_type_of
        self.accepted: set[type] = set()  # classes without the cast attribute

    def __call__(self, value: Any) -> bool:
        kind = type(value)
        if kind in self.accepted and _CAST not in value.__dict__:
            return True
        if self.is_type_of(value, None) is not True:
            return False
        attributes = getattr(value, "__dict__", None)
        if isinstance(attributes, dict) and getattr(value, _CAST, None) is None:
            self.accepted.add(kind)  # accepted as its class, not as cast
        return True


@functools.lru_cache(maxsize=512)
def _code(source: str) -> types.CodeType:
    """The source compiled, once per source: a query's selections compile to the same
    source every time it runs (its completions, the same for the same selection, are
    bound by the scope each run gives it)."""
    return compile(source, "<completion>", "exec")


_NOT_CHARGED, _LEAF, _OBJECTS = 0, 1, 2
_SIZED = ("JSON", "String")


_CHARGED: dict[GraphQLOutputType, int] = {}


def _charged(type_: GraphQLOutputType) -> int:
    """How the cost meter counts a field of `type_`: by size (JSON or String, or a list of
    leaves), by length (a list of objects), or not at all."""
    found = _CHARGED.get(type_)
    if found is None:
        found = _CHARGED[type_] = _charging(type_)
    return found


def _charging(type_: GraphQLOutputType) -> int:
    kind = type_.of_type if isinstance(type_, GraphQLNonNull) else type_
    if isinstance(kind, GraphQLList):
        item = get_named_type(kind)
        return _LEAF if isinstance(item, _LEAVES) else _OBJECTS
    return _LEAF if isinstance(kind, GraphQLScalarType) and kind.name in _SIZED else _NOT_CHARGED


def _charged_fast(type_: GraphQLOutputType) -> bool:
    """Whether the fast path counts a plain field of `type_`: JSON, or a list of leaves (a
    plain String is an attribute whose size is bounded where it is stored)."""
    kind = type_.of_type if isinstance(type_, GraphQLNonNull) else type_
    return _charged(type_) == _LEAF and (isinstance(kind, GraphQLList) or kind.name == "JSON")


def _metered(coordinate: str, complete: Complete) -> Complete:
    """`complete`, counting what it completes on the operation's meter; over the limit,
    the value is refused (graphql-core completes it again, and reports the limit)."""

    def read(value: Any) -> Any:
        completed = complete(value)
        meter = cost.meter()
        if meter is not None and completed is not _REFUSED:
            try:
                meter.charge(coordinate, completed)
            except GraphQLError:
                return _REFUSED
        return completed

    if getattr(complete, "strings", False):
        return _metered_strings(coordinate, read)
    return read


def _metered_strings(coordinate: str, metered: Complete) -> Complete:
    """`_metered` of a list of non-null String (or ID) items:
    a list whose items `str.join` takes (strings, which graphql-core gives as they are)
    is its own completion, counted by the length of their join (a path of a blast
    radius page: one a row); any other value goes to `metered`, `_metered`'s read."""

    def read(value: Any) -> Any:
        if type(value) is list:
            try:
                size = len("".join(value))
            except TypeError:
                pass
            else:
                meter = cost.meter()
                if meter is not None:
                    try:
                        meter.charge_strings(coordinate, len(value), size)
                    except GraphQLError:
                        return _REFUSED
                return value
        return metered(value)

    return read


class _Constant:
    """A completion to one value whatever the object (__typename)."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __call__(self, _: Any) -> str:
        return self.value


def _plain(field: GraphQLField) -> tuple[str, Complete | GraphQLObjectType] | None:
    """A basic Strawberry field (an attribute read by getattr) of a leaf type, a list of
    leaves or a non-null object type: its attribute, and its leaf completion or object
    type; else None."""
    definition = field.extensions.get(GraphQLCoreConverter.DEFINITION_BACKREF)
    if (
        field.args
        or not getattr(field.resolve, "_is_default", False)
        or not isinstance(definition, StrawberryField)
        or definition.default_resolver is not getattr
    ):
        return None
    type_ = field.type
    if isinstance(type_, GraphQLNonNull) and isinstance(type_.of_type, GraphQLObjectType):
        return definition.python_name, type_.of_type
    leaf = _leaf_completion(type_)
    return (definition.python_name, leaf) if leaf is not None else None


class PlainFieldsExecutionContext(StrawberryGraphQLCoreExecutionContext):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # (parent type, field name) -> how to read it when plain, else None
        self._plain: dict[tuple[str, str], tuple[str, Complete | GraphQLObjectType] | None] = {}
        # (object type, id of its field nodes' list) -> the list (kept: its id stays its
        # own) and the object's compiled completion, None when its selection is not plain
        self._objects: dict[tuple[str, int], tuple[FieldDetailsList, Complete | None]] = {}
        # a resolver wrapped by middleware (an extension's `resolve`) always runs it
        manager = self.middleware_manager
        self._wrapped = bool(manager and manager.middlewares)

    def _plain_field(
        self, parent_type: GraphQLObjectType, name: str
    ) -> tuple[str, Complete | GraphQLObjectType] | None:
        key = (parent_type.name, name)
        if key not in self._plain:
            found = parent_type.fields.get(name)  # None for __typename
            plain = _plain(found) if found and not self._wrapped else None
            if plain is not None and found is not None and _charged_fast(found.type):
                plain = (plain[0], _metered(f"{parent_type.name}.{name}", plain[1]))  # type: ignore[arg-type]
            self._plain[key] = plain
        return self._plain[key]

    def _completion(
        self, object_type: GraphQLObjectType, field_details_list: FieldDetailsList
    ) -> Complete | None:
        """The compiled completion of an object selected by `field_details_list` (graphql-
        core passes the same list for every object of a list), or None if not plain."""
        key = (object_type.name, id(field_details_list))
        if key not in self._objects:
            compiled = self._compile(object_type, field_details_list)
            self._objects[key] = (field_details_list, compiled)
        return self._objects[key][1]

    def _compile(
        self, object_type: GraphQLObjectType, field_details_list: FieldDetailsList
    ) -> Complete | None:
        grouped, deferred, _ = self.collect_subfields(object_type, field_details_list)
        if deferred:
            return None
        fields: list[tuple[str, str, Complete]] = []
        for name, details in grouped.items():
            node = details[0].node  # graphql-core reads the first's arguments too
            if any(one.defer_usage is not None for one in details) or node.arguments:
                return None
            if node.name.value == "__typename":  # any attribute will do: the name is constant
                fields.append((name, "__class__", _Constant(object_type.name)))
                continue
            plain = self._plain_field(object_type, node.name.value)
            if plain is None:
                return None
            attribute, read = plain
            complete = (
                self._completion(read, details) if isinstance(read, GraphQLObjectType) else read
            )
            if complete is None:
                return None
            fields.append((name, attribute, complete))
        return _object_completion(object_type, fields)

    def build_response(self, data: dict[str, Any] | None) -> Any:
        """The response; then the executor lets go of the request's context. graphql-core's
        executor is a reference cycle (its async helpers are its own bound methods), so
        it lasts until a garbage collection, and with the context everything the
        request's loaders loaded (a blast radius page: thousands of rows) would last as
        long, walked again by every young collection meanwhile (a tenth of a page's time
        over a whole radius). The response is built once every field is complete: nothing
        reads the context through the executor any more."""
        response = super().build_response(data)
        self.context_value = None
        return response

    def execute_field(
        self,
        parent_type: GraphQLObjectType,
        source: Any,
        field_details_list: FieldDetailsList,
        path: Path,
        position_context: Any,
    ) -> Any:
        node = field_details_list[0].node
        plain = self._plain_field(parent_type, node.name.value)
        if plain is not None and not node.arguments:
            completed = self._complete_plain(
                plain, source, field_details_list, path, position_context
            )
            if completed is not _REFUSED:
                return completed
        return super().execute_field(
            parent_type, source, field_details_list, path, position_context
        )

    def _complete_plain(
        self,
        plain: tuple[str, Complete | GraphQLObjectType],
        source: Any,
        field_details_list: FieldDetailsList,
        path: Path,
        position_context: Any,
    ) -> Any:
        """A plain field's completed value, or _REFUSED."""
        attribute, read = plain
        try:
            value = getattr(source, attribute)
        except Exception:  # graphql-core reads it again and reports it, at its path
            return _REFUSED
        if not isinstance(read, GraphQLObjectType):
            return read(value)
        complete = self._completion(read, field_details_list)
        if complete is not None:
            return complete(value)
        # Strawberry's is_type_of does not read its info
        if value is None or (
            read.is_type_of is not None and read.is_type_of(value, None) is not True  # type: ignore[arg-type]
        ):
            return _REFUSED
        # its fields are not all plain: each is executed as graphql-core does (errors
        # below a non-null object propagate past it either way)
        return self.collect_and_execute_subfields(
            read, field_details_list, path, value, position_context
        )

    def complete_value(
        self,
        return_type: GraphQLOutputType,
        field_details_list: FieldDetailsList,
        info: GraphQLResolveInfo[Any],
        path: Path,
        result: Any,
        position_context: Any,
    ) -> AwaitableOrValue[Any]:
        """As graphql-core completes it, once the cost meter counted it (app.api.cost):
        JSON and String leaves by their size, a list of leaves whole (not again item by
        item), a list of objects by its length. Within graphql-core's error handling: a
        field over the limit is an error at its path."""
        meter = cost.meter()
        if meter is not None and result is not None:
            charged = _charged(return_type)
            if charged == _LEAF and not isinstance(path.key, int):
                meter.charge(f"{info.parent_type.name}.{info.field_name}", result)
            elif charged == _OBJECTS and isinstance(result, list | tuple):
                meter.items(f"{info.parent_type.name}.{info.field_name}", len(result))
        return super().complete_value(
            return_type, field_details_list, info, path, result, position_context
        )

    def complete_iterable_value(
        self,
        item_type: GraphQLOutputType,
        field_details_list: FieldDetailsList,
        info: GraphQLResolveInfo[Any],
        path: Path,
        items: Iterable[Any],
        position_context: Any,
    ) -> AwaitableOrValue[list[Any]]:
        """A list (not streamed) of objects whose selection is plain: each item by the
        object's compiled completion, null items where the type allows them; when any
        item is refused, the whole list as graphql-core completes it."""
        required = isinstance(item_type, GraphQLNonNull)
        object_type = item_type.of_type if isinstance(item_type, GraphQLNonNull) else item_type
        complete = (
            self._completion(object_type, field_details_list)
            if isinstance(object_type, GraphQLObjectType) and isinstance(items, list | tuple)
            else None
        )
        if complete is not None and self.get_stream_usage(field_details_list, path) is None:
            completed = [complete(item) if required or item is not None else None for item in items]
            if _REFUSED not in completed:  # items are dicts or None: no __eq__ of theirs runs
                return completed
        return super().complete_iterable_value(
            item_type, field_details_list, info, path, items, position_context
        )
