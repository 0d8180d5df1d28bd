"""The blast-radius picture's layout: pure, no I/O.

Layers are given (a resource's shortest depth from the root), so of Sugiyama's steps
only the ordering within layers and the coordinates are left: barycenter sweeps down
and up, then columns left to right, one per depth. A layer over the drawing limit
arrives summarised (its first resources and how many more): the "+K more" node comes
last in its column and stands in for the undrawn resources, so a drawn resource whose
predecessors were not drawn hangs off it. Members deeper than the picture's depth
limit are one box in the column after the last: "N more beyond depth D". A box sits
level with its topmost predecessor unless the boxes above push it down, with lines from
its nearest three (a resource of `count` instances depends on every instance of
another: dozens of lines).

(grandalf, the Sugiyama library on PyPI, computes its own layering, longest path,
which is not the radius' depth, and its pure-Python ordering of a 420-node picture
took 120 ms of the page's budget; a fixed-layer barycenter is a few lines.)
"""

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

COLUMN_WIDTH = 290  # a layer's column, its boxes and the gap to the next
BOX_WIDTH = 240
LABEL_CHARS = 32  # of 12px monospace in a box; a longer address is cut (its title is whole)
ROW_HEIGHT = 30
BOX_HEIGHT = 22
MARGIN = 10
LINES_IN = 3  # lines into a box at most, from its nearest predecessors: no hairball
SWEEPS = 2  # down then up, twice: enough for a layered tree-like radius


@dataclass(frozen=True)
class Node:
    key: Hashable | None  # the resource's key; None for a "+K more" node
    label: str
    depth: int
    x: int  # the box's top left corner
    y: int
    more: int = 0  # for a "+K more" node: K
    unlined: int = 0  # edges in not drawn: over LINES_IN, the farthest


@dataclass(frozen=True)
class Line:
    x1: int
    y1: int
    x2: int
    y2: int
    summary: bool  # from a "+K more" node
    count: int = 1  # the edges it bundles (between two groups)
    reason: str = ""  # where a configuration is known: "implicit", "explicit" or "declared"


@dataclass(frozen=True)
class Picture:
    nodes: list[Node]
    lines: list[Line]
    width: int
    height: int
    beyond: Node | None = None  # "N more beyond depth D": the members past the limit


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
    root: tuple[Hashable, str],
    layers: Sequence[Layer],
    edges: Sequence[tuple[Hashable, Hashable]],
    *,
    beyond: int = 0,
    weights: Mapping[tuple[Any, Any], int] | None = None,
    reasons: Mapping[tuple[Any, Any], str] | None = None,
) -> Picture:
    """Boxes and lines for `root` (depth 0) and `layers` (depth 1, 2, ...), `edges` the
    (near, far) pairs between drawn resources: only those from one depth to the next
    are drawn; `beyond` members past the last layer (the depth limit), one box;
    `weights` how many edges a line between two boxes bundles (1 if not given);
    `reasons`: why its edges are there (its line's `reason`), where a configuration says."""
    weights = weights or {}
    reasons = reasons or {}
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
    order_layers(order, up, down)
    positions: dict[object, tuple[int, int]] = {}
    nodes: list[Node] = []
    lines: list[Line] = []
    for depth, keys in enumerate(order):
        x = MARGIN + depth * COLUMN_WIDTH
        y = MARGIN - ROW_HEIGHT  # the row above the first
        for key in keys:  # level with its first predecessor where the rows above leave room
            nears = up.get(key, set())  # all placed: the column before
            top = min((positions[n][1] for n in nears), default=MARGIN)
            y = max(y + ROW_HEIGHT, top)
            positions[key] = (x, y)
            shown = sorted(nears, key=lambda n: (abs(positions[n][1] - y), positions[n][1]))
            shown = shown[:LINES_IN]
            lines += [
                _line(
                    positions[n],
                    (x, y),
                    isinstance(n, _More),
                    weights.get((n, key), 1),
                    reasons.get((n, key), ""),
                )
                for n in shown
            ]
            nodes.append(Node(key, labels[key], depth, x, y, unlined=len(nears) - len(shown)))
        if more[depth]:
            y += ROW_HEIGHT
            positions[_More(depth)] = (x, y)
            nodes.append(Node(None, f"+{more[depth]:,} more", depth, x, y, more[depth]))
    cut = None
    if beyond:
        depth = len(order)
        label = f"{beyond:,} more beyond depth {depth - 1}"
        cut = Node(None, label, depth, MARGIN + depth * COLUMN_WIDTH, MARGIN, beyond)
    columns = len(order) + (1 if cut else 0)
    width = MARGIN * 2 + (columns - 1) * COLUMN_WIDTH + BOX_WIDTH
    height = max(node.y for node in nodes) + BOX_HEIGHT + MARGIN
    return Picture(nodes, lines, width, height, cut)


def shorten(label: str, chars: int = LABEL_CHARS) -> str:
    """`label` in at most `chars` characters: its start and its end (an address's index)."""
    if len(label) <= chars:
        return label
    head = (chars - 1) // 2
    return f"{label[:head]}…{label[len(label) - (chars - 1 - head) :]}"


def _line(
    near: tuple[int, int], far: tuple[int, int], summary: bool, count: int, reason: str
) -> Line:
    middle = BOX_HEIGHT // 2
    x1, y1, x2, y2 = near[0] + BOX_WIDTH, near[1] + middle, far[0], far[1] + middle
    return Line(x1, y1, x2, y2, summary, count, reason)


def order_layers(
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


@dataclass(frozen=True)
class Box:
    """A box of a grouped picture: one resource (`address`), or a group of `members`
    resources of one type and name at a depth (`address` None)."""

    depth: int
    name: str  # the group's name, or the resource's address
    members: int
    address: str | None

    @property
    def label(self) -> str:
        return self.address if self.address is not None else f"{self.name} x {self.members:,}"


def grouped_layers(
    sizes: Sequence[tuple[int, str, int, str]],
    per_layer: int,
    order: Callable[[str], Any],
) -> tuple[list[Layer], dict[tuple[int, str], Box]]:
    """The layers of a grouped picture from each depth's boxes (depth, name, members,
    first member's address): a box of one member is that resource, of more a group. Each
    depth draws its first `per_layer` boxes by `order` of their names; the members of the
    rest are its "+K more". Keys are (depth, name)."""
    by_depth: dict[int, list[Box]] = {}
    for depth, name, members, first in sizes:
        box = Box(depth, name, members, first if members == 1 else None)
        by_depth.setdefault(depth, []).append(box)
    layers: list[Layer] = []
    boxes: dict[tuple[int, str], Box] = {}
    for depth in range(1, max(by_depth, default=0) + 1):
        found = sorted(by_depth.get(depth, []), key=lambda box: order(box.name))
        drawn = found[:per_layer]
        boxes.update({(depth, box.name): box for box in drawn})
        rest = sum(box.members for box in found[per_layer:])
        layers.append(Layer(len(drawn) + rest, [((depth, b.name), b.label) for b in drawn]))
    return layers, boxes


def bundled_edges(
    edges: Sequence[tuple[int, str, str, int]],
) -> dict[tuple[tuple[int, str], tuple[int, str]], int]:
    """(far depth, near box, far box, edges) as layout's weights: one line a pair of boxes."""
    return {((depth - 1, near), (depth, far)): count for depth, near, far, count in edges}


def bundle_reasons(
    edges: Sequence[tuple[int, str, str, int, str | None]],
) -> dict[tuple[tuple[int, str], tuple[int, str]], str]:
    """(far depth, near box, far box, edges, reason) as layout's reasons: a line's, where
    its edges share one."""
    return {((d - 1, near), (d, far)): why for d, near, far, _, why in edges if why}
