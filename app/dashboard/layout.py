"""The blast-radius picture's layout: pure, no I/O.

Layers are given (a resource's shortest depth from the root), so of Sugiyama's steps
only the ordering within layers and the coordinates are left: barycenter sweeps down
and up, then columns left to right, one per depth. A layer over the drawing limit
arrives summarised (its first resources and how many more): the "+K more" node comes
last in its column and stands in for the undrawn resources, so a drawn resource whose
predecessors were not drawn hangs off it.

(grandalf, the Sugiyama library on PyPI, computes its own layering, longest path,
which is not the radius' depth, and its pure-Python ordering of a 420-node picture
took 120 ms of the page's budget; a fixed-layer barycenter is a few lines.)
"""

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

COLUMN_WIDTH = 250  # a layer's column, its boxes and the gap to the next
BOX_WIDTH = 200
ROW_HEIGHT = 30
BOX_HEIGHT = 22
MARGIN = 10
SWEEPS = 2  # down then up, twice: enough for a layered tree-like radius


@dataclass(frozen=True)
class Node:
    key: Hashable | None  # the resource's key; None for a "+K more" node
    label: str
    depth: int
    x: int  # the box's top left corner
    y: int
    more: int = 0  # for a "+K more" node: K


@dataclass(frozen=True)
class Line:
    x1: int
    y1: int
    x2: int
    y2: int
    summary: bool  # from a "+K more" node


@dataclass(frozen=True)
class Picture:
    nodes: list[Node]
    lines: list[Line]
    width: int
    height: int


@dataclass(frozen=True)
class Layer:
    """A depth's resources to draw (key, label: in their order) and how many it has."""

    total: int
    drawn: Sequence[tuple[Hashable, str]]


@dataclass(frozen=True)
class _More:
    """The "+K more" node of a depth, in a layer's order and as a predecessor."""

    depth: int


def layout(
    root: tuple[Hashable, str], layers: Sequence[Layer], edges: Sequence[tuple[Hashable, Hashable]]
) -> Picture:
    """Boxes and lines for `root` (depth 0) and `layers` (depth 1, 2, ...), `edges` the
    (near, far) pairs between drawn resources: only those from one depth to the next
    are drawn."""
    order: list[list[object]] = [[root[0]]]
    labels = {root[0]: root[1]}
    depth_of: dict[object, int] = {root[0]: 0}
    for depth, layer in enumerate(layers, start=1):
        keys: list[object] = [key for key, _ in layer.drawn]
        labels.update(layer.drawn)
        depth_of.update(dict.fromkeys(keys, depth))
        order.append(keys)
    more = [0] + [layer.total - len(layer.drawn) for layer in layers]
    up: dict[object, set[object]] = {}
    down: dict[object, set[object]] = {}
    for near, far in edges:
        if near in depth_of and far in depth_of and depth_of[far] == depth_of[near] + 1:
            up.setdefault(far, set()).add(near)
            down.setdefault(near, set()).add(far)
    for depth, keys in enumerate(order[1:]):
        if more[depth]:  # a resource with no drawn predecessor has one among the undrawn
            up.update({key: {_More(depth)} for key in keys if key not in up})
    _order(order, up, down)
    positions: dict[object, tuple[int, int]] = {}
    nodes: list[Node] = []
    height = max(len(keys) + (more[d] > 0) for d, keys in enumerate(order)) * ROW_HEIGHT
    for depth, keys in enumerate(order):
        x = MARGIN + depth * COLUMN_WIDTH
        slots = len(keys) + (more[depth] > 0)
        top = MARGIN + (height - slots * ROW_HEIGHT) // 2
        for index, key in enumerate(keys):
            positions[key] = (x, top + index * ROW_HEIGHT)
            nodes.append(Node(key, labels[key], depth, x, top + index * ROW_HEIGHT))
        if more[depth]:
            y = top + len(keys) * ROW_HEIGHT
            positions[_More(depth)] = (x, y)
            nodes.append(Node(None, f"+{more[depth]:,} more", depth, x, y, more[depth]))
    lines = [
        _line(positions[near], positions[far], summary=isinstance(near, _More))
        for far, nears in up.items()
        for near in sorted(nears, key=lambda n: positions[n][1])
    ]
    width = MARGIN * 2 + (len(order) - 1) * COLUMN_WIDTH + BOX_WIDTH
    return Picture(nodes, lines, width, height + 2 * MARGIN)


def _line(near: tuple[int, int], far: tuple[int, int], *, summary: bool) -> Line:
    middle = BOX_HEIGHT // 2
    return Line(near[0] + BOX_WIDTH, near[1] + middle, far[0], far[1] + middle, summary)


def _order(
    order: list[list[object]], up: dict[object, set[object]], down: dict[object, set[object]]
) -> None:
    """Barycenter sweeps in place: a layer sorted by the mean position of its neighbours
    in the layer just ordered (stable: ties and unconnected keep their order)."""
    for _ in range(SWEEPS):
        for depth in range(1, len(order)):
            _sort(order[depth], order[depth - 1], up, depth - 1)
        for depth in range(len(order) - 2, 0, -1):
            _sort(order[depth], order[depth + 1], down, None)


def _sort(
    keys: list[object], fixed: list[object], neighbours: dict[object, set[object]], more: int | None
) -> None:
    index = {key: i for i, key in enumerate(fixed)}
    if more is not None:
        index[_More(more)] = len(fixed)  # the "+K more" node sits last
    current = {key: i for i, key in enumerate(keys)}

    def barycenter(key: object) -> float:
        found = [index[n] for n in neighbours.get(key, ()) if n in index]
        return sum(found) / len(found) if found else current[key]

    keys.sort(key=barycenter)
