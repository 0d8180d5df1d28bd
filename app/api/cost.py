"""What a GraphQL answer costs: an estimate before anything runs, and a meter while it runs.

The estimate (pure: the document, the schema, the variables and the kept sizes) has
two figures. Nodes, the work: summed over the lists an operation selects, the
product of the list sizes along the path to each (a connection's `first`, counted
where its `edges` are selected; an unpaged list its kept length, else
UNPAGED_LIST_ESTIMATE), plus a fixed weight for each field whose work does not
follow its items: a blast radius walked through the links between states (each
occurrence in the document is a statement of its own), a walk (kept once walked),
a version diff, an export. Bytes, the answer's size:
each JSON field (and each String field with a resolver: an export) by the mean
size its answers had on this server (kept sizes, below), else a default.

The meter counts the bytes of what the answer actually holds, as it is completed:
each JSON value (and String) by its encoded size, once per object however many
times the answer repeats it; each list by its length. Past the request's limit it
refuses every further field, and the answer is a single LIMIT_EXCEEDED error with
the figure: the response is never built past the limit, so a server's memory for
one answer stays within it. What it measures is kept (per field: a running mean)
for the next estimate, so a query that was stopped while running is refused
before it runs the next time.
"""

import contextvars
import math
from dataclasses import dataclass, field
from typing import Any

import orjson
from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLField,
    GraphQLList,
    GraphQLNonNull,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    VariableNode,
    get_named_type,
)
from graphql.language import BooleanValueNode

from app import jsonutil
from app.api.pagination import DEFAULT_FIRST
from app.errors import LimitExceeded

UNPAGED_LIST_ESTIMATE = 10  # `tables`, `columns`: short lists without paging, until measured
# Fields whose work is not their items: counted as this many nodes each, besides their
# items (the node limit, 25,000, is about 2.5 s of the event loop)
# a blast radius through the links between states, walked each time: a statement for each
# occurrence in the document (the roots under one share it), and a share for each root
CROSS_WALK_NODES = 2_500
CROSS_ROOT_NODES = 25
WALK_NODES = 50  # a blast radius within a state: walked once, then kept (app/graph/edges.py)
DIFF_NODES = 50  # a version diff: the work follows the change; its lists count their length
EXPORT_NODES = 2_500  # an IaC export or a whole state: the document, built whole
JSON_BYTES = 256  # a JSON field's size until one is measured
TEXT_BYTES = 64  # a String field with a resolver (an export), until measured
ITEM_BYTES = 16  # a list item's share of the answer: brackets, commas, a key
_HEAVY = {
    "impact": CROSS_WALK_NODES,  # a plan's impact: every changed instance's radius
    "markdown": CROSS_WALK_NODES,
    "submitPlan": EXPORT_NODES,
    "diff": DIFF_NODES,
    "export": EXPORT_NODES,
    "exportState": EXPORT_NODES,
}


class KeptSizes:
    """Per field ("Type.field"): the running mean of its answers' sizes (bytes) and of its
    lists' lengths, as this server measured them. In process: an estimate, not an
    account, so it needs no statement; a new server starts from the defaults."""

    WEIGHT = 0.1  # of each new measure in the mean

    def __init__(self) -> None:
        self.bytes: dict[str, float] = {}
        self.lengths: dict[str, float] = {}

    @staticmethod
    def _add(means: dict[str, float], key: str, value: float) -> None:
        old = means.get(key)
        means[key] = value if old is None else old + (value - old) * KeptSizes.WEIGHT


KEPT = KeptSizes()


def _default_bytes(type_name: str, definition: GraphQLField) -> int:
    """The default size of a leaf field the estimate sizes: JSON, or a String with a
    resolver (an attribute's string is bounded where it is stored); else 0."""
    if type_name == "JSON":
        return JSON_BYTES
    resolved = not getattr(definition.resolve, "_is_default", False)
    return TEXT_BYTES if type_name == "String" and resolved else 0


@dataclass(frozen=True)
class _Field:
    """What the estimate reads of a field of the schema, found once."""

    coordinate: str  # "Type.field"
    child: Any  # its named type
    is_list: bool
    paged: bool  # a connection: it has `first`
    in_connection: bool  # a connection's own list (its edges)
    default_bytes: int  # sized by the estimate (JSON, a resolved String): until measured
    heavy: int  # nodes of work besides its items


_FIELDS: dict[tuple[Any, str], _Field] = {}


def _field(parent: Any, name: str) -> _Field:
    found = _FIELDS.get((parent, name))
    if found is None:
        definition = parent.fields[name]
        kind = definition.type
        kind = kind.of_type if isinstance(kind, GraphQLNonNull) else kind
        child = get_named_type(kind)
        found = _FIELDS[(parent, name)] = _Field(
            f"{parent.name}.{name}",
            child,
            isinstance(kind, GraphQLList),
            "first" in definition.args,
            parent.name.endswith("Connection"),
            _default_bytes(child.name, definition),
            _HEAVY.get(name, 0),
        )
    return found


@dataclass(frozen=True)
class Estimate:
    nodes: int
    bytes: int

    @property
    def units(self) -> int:
        """The cost in a token's budget: a node, or a KiB of answer, is one unit."""
        return self.nodes + math.ceil(self.bytes / 1024)


def estimate(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation_name: str | None,
    variables: dict[str, Any] | None,
    kept: KeptSizes | None = None,
) -> Estimate:
    """The nodes and bytes an operation of a valid document would answer (see above);
    without `kept`, every field at its default."""
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    operation = next(
        (o for o in operations if operation_name in (None, o.name and o.name.value)), None
    )
    if operation is None:
        return Estimate(0, 0)
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    values = dict(variables or {})
    for definition in operation.variable_definitions or ():
        name, default = definition.variable.name.value, definition.default_value
        if name not in values and isinstance(default, IntValueNode | BooleanValueNode):
            values[name] = (
                default.value if isinstance(default, BooleanValueNode) else int(default.value)
            )
    root = schema.get_root_type(operation.operation)
    assert root is not None
    lengths = kept.lengths if kept else {}
    sizes = kept.bytes if kept else {}

    def argument(node: FieldNode, name: str) -> Any:
        found = next((a for a in node.arguments or () if a.name.value == name), None)
        if found is None:
            return None
        if isinstance(found.value, VariableNode):
            return values.get(found.value.name.value)
        if isinstance(found.value, IntValueNode):
            return int(found.value.value)
        if isinstance(found.value, BooleanValueNode):
            return found.value.value
        return None

    def first(node: FieldNode) -> int:
        value = argument(node, "first")
        return value if isinstance(value, int) and value > 0 else DEFAULT_FIRST

    def count(selections: SelectionSetNode | None, parent: Any, many: int) -> tuple[int, int]:
        """Nodes and bytes of the fields selected under `selections`, `many` times over."""
        nodes = size = 0
        for selection in selections.selections if selections else ():
            if isinstance(selection, FieldNode):
                name = selection.name.value
                if name.startswith("__"):
                    continue  # introspection
                field = _field(parent, name)
                nodes += many * field.heavy
                if name == "blastRadius":
                    cross = argument(selection, "crossStates") is True
                    nodes += (
                        CROSS_WALK_NODES + many * CROSS_ROOT_NODES if cross else many * WALK_NODES
                    )
                if selection.selection_set is None:
                    if field.default_bytes:
                        per_item = sizes.get(field.coordinate, field.default_bytes)
                        if field.is_list:
                            per_item *= lengths.get(field.coordinate, UNPAGED_LIST_ESTIMATE)
                        size += math.ceil(many * per_item)
                    continue
                items, child = many, field.child
                if field.paged:  # a connection: its edges are `first` items
                    items = many * first(selection)
                elif field.is_list:
                    # a connection's edges were counted by `first`, on the connection
                    length = lengths.get(field.coordinate, UNPAGED_LIST_ESTIMATE)
                    items = many if field.in_connection else math.ceil(many * max(length, 1))
                    nodes += items
                below = count(selection.selection_set, child, items)
                nodes, size = nodes + below[0], size + below[1]
            else:
                if isinstance(selection, InlineFragmentNode):
                    condition = selection.type_condition
                    selected = selection.selection_set
                else:
                    assert isinstance(selection, FragmentSpreadNode)
                    fragment = fragments[selection.name.value]
                    condition, selected = fragment.type_condition, fragment.selection_set
                child = schema.get_type(condition.name.value) if condition else parent
                below = count(selected, child, many)
                nodes, size = nodes + below[0], size + below[1]
        return nodes, size

    nodes, size = count(operation.selection_set, root, 1)
    return Estimate(nodes, size)


def _encoded_size(value: Any) -> int:
    try:
        return len(orjson.dumps(value))
    except TypeError:  # an integer past 64 bits
        return len(jsonutil.dumps(value))


def _size(value: Any) -> int:
    """A completed leaf's bytes in the answer, about (strings by their length)."""
    kind = type(value)
    if kind is str:
        return len(value) + 2
    if kind is list or kind is tuple:
        try:  # strings (join refuses anything else): their lengths, quotes and commas
            return len("".join(value)) + 3 * len(value) + 2
        except TypeError:
            return _encoded_size(value)
    if kind is dict:
        return _encoded_size(value)
    return 8


@dataclass
class Meter:
    """The bytes one answer holds so far, and its limit (see above)."""

    limit: int
    used: int = 0
    over: bool = False
    # id -> (the value, kept alive so its id stays its own; its size)
    _seen: dict[int, tuple[Any, int]] = field(default_factory=dict)
    # per field: [bytes, answers] and [items, lists] measured, for the kept means
    _measured: dict[str, list[int]] = field(default_factory=dict)
    _lengths: dict[str, list[int]] = field(default_factory=dict)
    _stopped: GraphQLError | None = None

    def refusal(self) -> LimitExceeded:
        """The limit's error, with the figure."""
        return LimitExceeded(
            f"the answer is over {self.limit} bytes (its limit) with {self.used} bytes "
            "counted; select fewer or smaller fields",
            {"bytes": self.used, "max": self.limit},
        )

    def _refuse(self) -> GraphQLError:
        """The error every field met after the limit gets: one object, raised again and
        again without a traceback, and with a path, so that graphql-core keeps it as it
        is (tens of thousands of fields may meet it: each its own error, with its frames,
        took more memory than the answer the limit saved)."""
        self.over = True
        if self._stopped is None:
            refusal = self.refusal()
            # (the path: any, not empty; the answer is replaced by one error in the end)
            self._stopped = GraphQLError(refusal.message, path=["-"], original_error=refusal)
        return self._stopped.with_traceback(None)

    def charge(self, coordinate: str, value: Any) -> None:
        """Count a leaf (JSON, a String, a list of them) of the field `coordinate`."""
        if self.over:
            raise self._refuse()
        kind = type(value)
        if kind is dict or kind is list or kind is tuple:
            seen = self._seen.get(id(value))
            if seen is None:
                seen = self._seen[id(value)] = (value, _size(value))
            size = seen[1]
            self.used += size
            if kind is not dict:
                length = len(value)
                _measure(self._lengths, coordinate, length)
                if length:
                    size //= length
        elif value is None:
            return
        else:
            size = _size(value)
            self.used += size
        _measure(self._measured, coordinate, size)
        if self.used > self.limit:
            raise self._refuse()

    def charge_strings(self, coordinate: str, count: int, length: int) -> None:
        """Count a list of `count` strings of `length` characters in all, of the field
        `coordinate`: as `charge` counts it."""
        if self.over:
            raise self._refuse()
        size = length + 3 * count + 2
        self.used += size
        _measure(self._lengths, coordinate, count)
        _measure(self._measured, coordinate, size // count if count else size)
        if self.used > self.limit:
            raise self._refuse()

    def items(self, coordinate: str, count: int) -> None:
        """Count a list of `count` objects of the field `coordinate`."""
        if self.over:
            raise self._refuse()
        self.used += count * ITEM_BYTES
        _measure(self._lengths, coordinate, count)
        if self.used > self.limit:
            raise self._refuse()

    def keep(self, kept: KeptSizes) -> None:
        """What this answer measured, into `kept`: each field's mean size (of a list of
        leaves: an item's) and mean length."""
        for measured, means in ((self._measured, kept.bytes), (self._lengths, kept.lengths)):
            for coordinate, (total, count) in measured.items():
                KeptSizes._add(means, coordinate, total / count)


def _measure(measured: dict[str, list[int]], coordinate: str, value: int) -> None:
    found = measured.get(coordinate)
    if found is None:
        measured[coordinate] = [value, 1]
    elif found[1] < 64:  # enough for a mean; more adds nothing to it
        found[0] += value
        found[1] += 1


_METER: contextvars.ContextVar[Meter | None] = contextvars.ContextVar("meter", default=None)


def meter() -> Meter | None:
    """The meter of the operation running in this context, if any."""
    return _METER.get()


def metered(limit: int) -> "_Metering":
    return _Metering(limit)


class _Metering:
    """`with metered(limit) as m:` an operation executed inside counts on `m`."""

    def __init__(self, limit: int) -> None:
        self.meter = Meter(limit)
        self._token: contextvars.Token[Meter | None] | None = None

    def __enter__(self) -> Meter:
        self._token = _METER.set(self.meter)
        return self.meter

    def __exit__(self, *_: object) -> None:
        assert self._token is not None
        _METER.reset(self._token)
        self.meter.keep(KEPT)
