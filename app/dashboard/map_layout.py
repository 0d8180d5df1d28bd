"""The states map's layout: pure, no I/O.

States are boxes, a line from each producer to each consumer reading its outputs
(terraform_remote_state). Columns left to right are link depths: a state reading no
other is in the first column, a consumer one column right of the farthest producer it
reads (longest path), so every line runs left to right. A cycle of states reading each
other has no such order: its state with the fewest producers not yet placed (then by
name) is placed first, and the lines back into it run right to left. Within a column
boxes are ordered by barycenter sweeps (app/dashboard/layout.py), then placed level
with the middle of their producers, and producers level with the middle of their
consumers, never closer than a row. A line's label (the outputs read) is stacked with
the others coming into its consumer, left of its box in the order the lines come in;
into a consumer of more than STACKED lines, and for a line back, halfway along it.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from app.dashboard.layout import BOX_HEIGHT, BOX_WIDTH, MARGIN, ROW_HEIGHT, order_layers

GAP = 170  # between two columns: room for the lines and their labels
COLUMN_WIDTH = BOX_WIDTH + GAP
LABEL_CHARS = 22  # a line's label: the outputs read (whole in its title)
LABEL_LINE = 11  # px between the labels stacked by a consumer
STACKED = 3  # labels stacked by a consumer at most (more: each on its line, halfway)
BEND = 50  # how far a line's curve leaves a box before turning


@dataclass(frozen=True)
class Link:
    """A consumer's data source reading a producer's outputs."""

    producer: str
    consumer: str
    address: str  # the data source, in the consumer
    outputs: tuple[str, ...]
    stale: bool


@dataclass(frozen=True)
class MapNode:
    name: str
    column: int
    x: int  # the box's top left corner
    y: int
    stale: bool  # a consumer one of whose links is stale
    producers: int  # states it reads
    consumers: int  # states reading it


@dataclass(frozen=True)
class MapLine:
    """One line a producer-consumer pair, however many data sources read between them."""

    producer: str
    consumer: str
    x1: int
    y1: int
    x2: int
    y2: int
    outputs: tuple[str, ...]  # every output the consumer reads of the producer, by name
    addresses: tuple[str, ...]  # the consumer's data sources reading it
    stale: bool
    back: bool  # against the columns' order (a cycle)
    stack: tuple[int, int] | None = None  # its label's place by the consumer: (rank, of)

    @property
    def label(self) -> str:
        text = ", ".join(self.outputs)
        return text if len(text) <= LABEL_CHARS else f"{text[: LABEL_CHARS - 1]}…"

    def _controls(self) -> tuple[float, float, float, float]:
        if self.back:  # out of the producer's left, over, into the consumer's right
            return self.x1 - BEND, self.y1 - BEND, self.x2 + BEND, self.y2 - BEND
        pull = max(BEND, (self.x2 - self.x1) / 2)
        return self.x1 + pull, self.y1, self.x2 - pull, self.y2

    @property
    def path(self) -> str:
        """SVG path data: a cubic curve from the producer's side to the consumer's."""
        ax, ay, bx, by = self._controls()
        return f"M{self.x1},{self.y1} C{ax:g},{ay:g} {bx:g},{by:g} {self.x2},{self.y2}"

    @property
    def label_at(self) -> tuple[float, float, str]:
        """Its label's anchor point (the text's baseline) and SVG text-anchor: stacked
        left of the consumer's box, in the order the lines come in; else halfway along
        the curve, just above it."""
        if self.stack is not None:
            rank, of = self.stack
            return self.x2 - 4, self.y2 + (rank - (of - 1) / 2) * LABEL_LINE + 3, "end"
        ax, ay, bx, by = self._controls()
        x = (self.x1 + 3 * ax + 3 * bx + self.x2) / 8
        y = (self.y1 + 3 * ay + 3 * by + self.y2) / 8
        return round(x, 1), round(y - 3, 1), "middle"


@dataclass(frozen=True)
class StatesMap:
    nodes: list[MapNode]
    lines: list[MapLine]
    width: int
    height: int


def columns(names: Iterable[str], pairs: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Each state's column: 0 for one reading none, else one more than the farthest of
    its producers placed before it (all of them, outside a cycle). `pairs`: (producer,
    consumer); a state reading itself is no constraint."""
    producers: dict[str, set[str]] = {name: set() for name in names}
    for producer, consumer in pairs:
        producers.setdefault(producer, set())
        if producer != consumer:
            producers.setdefault(consumer, set()).add(producer)
    placed: dict[str, int] = {}
    waiting = sorted(producers)
    while waiting:
        ready = [n for n in waiting if producers[n] <= placed.keys()]
        if not ready:  # only cycles are left: break one
            ready = [min(waiting, key=lambda n: (len(producers[n] - placed.keys()), n))]
        for name in ready:
            placed[name] = 1 + max((placed[p] for p in producers[name] if p in placed), default=-1)
        chosen = set(ready)
        waiting = [n for n in waiting if n not in chosen]
    return placed


def states_map(names: Sequence[str], links: Sequence[Link]) -> StatesMap:
    """The map of `names` (each a box, linked or not) and `links` between them (a link
    naming a state not in `names` adds it)."""
    pairs: dict[tuple[str, str], list[Link]] = {}
    for link in links:
        pairs.setdefault((link.producer, link.consumer), []).append(link)
    column = columns(names, pairs)
    order: list[list[object]] = [[] for _ in range(max(column.values(), default=-1) + 1)]
    for name in sorted(column):
        order[column[name]].append(name)
    up: dict[object, set[object]] = {}
    down: dict[object, set[object]] = {}
    for producer, consumer in pairs:
        if producer != consumer:
            up.setdefault(consumer, set()).add(producer)
            down.setdefault(producer, set()).add(consumer)
    order_layers(order, up, down)
    y = _rows(order, up, down)
    stale = {consumer for (_, consumer), found in pairs.items() if any(k.stale for k in found)}
    nodes = [
        MapNode(
            str(name),
            depth,
            MARGIN + depth * COLUMN_WIDTH,
            y[name],
            name in stale,
            len(up.get(name, ())),
            len(down.get(name, ())),
        )
        for depth, keys in enumerate(order)
        for name in keys
    ]
    lines = _stacked([_line(*pair, found, column, y) for pair, found in pairs.items()])
    lines.sort(key=lambda line: (line.producer, line.consumer))
    width = MARGIN * 2 + max(len(order) - 1, 0) * COLUMN_WIDTH + BOX_WIDTH
    height = max((node.y for node in nodes), default=0) + BOX_HEIGHT + MARGIN
    return StatesMap(nodes, lines, width, height)


def _rows(
    order: list[list[object]], up: dict[object, set[object]], down: dict[object, set[object]]
) -> dict[object, int]:
    """Each box's top: down the columns level with the middle of its producers, then back
    up level with the middle of its consumers (a state reading none: where it was); in
    its column's order, a row apart at least."""
    y: dict[object, int] = {}

    def place(keys: list[object], wanted: dict[object, float]) -> None:
        top = MARGIN - ROW_HEIGHT
        for key in keys:
            top = max(top + ROW_HEIGHT, round(wanted.get(key, MARGIN)))
            y[key] = top

    def middle(neighbours: Iterable[object]) -> float | None:
        found = [y[n] for n in neighbours if n in y]
        return (min(found) + max(found)) / 2 if found else None

    for keys in order:
        place(keys, {k: m for k in keys if (m := middle(up.get(k, ()))) is not None})
    for keys in reversed(order[:-1]):
        wanted = {}
        for key in keys:
            m = middle(down.get(key, ()))
            wanted[key] = m if m is not None else y[key]
        place(keys, wanted)
    return y


def _stacked(lines: list[MapLine]) -> list[MapLine]:
    """The lines, each forward one into a consumer of at most STACKED such lines with its
    label's place in the stack by that consumer: in the order its lines come in."""
    into: dict[str, list[MapLine]] = {}
    for line in lines:
        if not line.back:
            into.setdefault(line.consumer, []).append(line)
    places: dict[tuple[str, str], tuple[int, int]] = {}
    for consumer, found in into.items():
        if len(found) <= STACKED:
            found.sort(key=lambda line: (line.y1, line.producer))
            places.update({(k.producer, consumer): (i, len(found)) for i, k in enumerate(found)})
    return [replace(line, stack=places.get((line.producer, line.consumer))) for line in lines]


def _line(
    producer: str,
    consumer: str,
    found: list[Link],
    column: dict[str, int],
    y: dict[object, int],
) -> MapLine:
    back = column[consumer] <= column[producer]
    px, cx = MARGIN + column[producer] * COLUMN_WIDTH, MARGIN + column[consumer] * COLUMN_WIDTH
    middle = BOX_HEIGHT // 2
    # forwards from the producer's right side into the consumer's left; a line back (a
    # cycle, or a state reading itself) from the producer's left to the consumer's right
    x1, x2 = (px, cx + BOX_WIDTH) if back else (px + BOX_WIDTH, cx)
    return MapLine(
        producer,
        consumer,
        x1,
        y[producer] + middle,
        x2,
        y[consumer] + middle,
        tuple(sorted({name for link in found for name in link.outputs})),
        tuple(sorted({link.address for link in found})),
        any(link.stale for link in found),
        back,
    )
