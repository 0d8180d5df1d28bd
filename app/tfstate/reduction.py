"""Which dependency edges are direct: the transitive reduction of a state's graph (pure).

Terraform writes each instance's `dependencies` transitively closed (c depends on
b on a is stored as c: [a, b]), so every declared edge is kept (the seed: edges
and `dependencies_raw` agree) and the ones no other declared path implies are
marked direct. Depth and paths follow direct edges (app/graph/edges.py).

Exact for any graph: cycles are strongly connected components (Tarjan), whose
inner edges are all direct; between components, an edge u -> v is direct unless
v's component is reachable from another successor of u's. Reachability is kept
as one bitset (a Python int) per component, built sinks first. Its memory grows
with the square of the components, so past EXACT_LIMIT components the rule takes
one step instead (u -> v is implied when u depends on some w that depends on v),
which is the same on Terraform's closed dependencies and may keep a few implied
edges elsewhere.
"""

import array
import operator
from collections.abc import Iterable, Iterator, Sequence

from app.process import gc_paused

Edge = tuple[int, int]


class Pairs:
    """Edges as two arrays of node numbers, appended in order: 16 bytes an edge, where a
    list of pairs holds a tuple and its ints (about 64 bytes more). Iterated as pairs."""

    __slots__ = ("sources", "targets")

    def __init__(self) -> None:
        self.sources = array.array("q")
        self.targets = array.array("q")

    def append(self, source: int, target: int) -> None:
        self.sources.append(source)
        self.targets.append(target)

    def __len__(self) -> int:
        return len(self.sources)

    def __iter__(self) -> Iterator[Edge]:
        return zip(self.sources, self.targets, strict=True)


# 30,000 components: at most 56 MB of bitsets (n^2 / 16 bytes).
EXACT_LIMIT = 30_000


def direct_edges(nodes: int, edges: Sequence[Edge]) -> set[Edge]:
    """The edges of `edges` (pairs of node numbers below `nodes`) that are direct."""
    return {edge for edge, direct in zip(edges, direct_flags(nodes, edges), strict=True) if direct}


def direct_flags(nodes: int, edges: Sequence[Edge]) -> list[bool]:
    """Whether each of `edges` is direct (a list: a big state's set of them would be a
    table of a million slots)."""
    # Many small containers: with a parsed state alive, GC passes would walk it over and over.
    with gc_paused():
        flags = _direct_flags(nodes, edges, nodes)
    assert flags is not None  # no relays: nothing to refuse
    return flags


class Relayed:
    """The reduction of a graph whose nodes from `relays` on stand for their successors
    (app/tfstate/grain.py): a node's edge to a relay is its edges to each of the relay's
    successors, which have no edge to one another. The flag of an edge to a relay is
    that of each edge it stands for, provided no relay is on a cycle (which `cyclic`
    lists otherwise, the flags being then None)."""

    def __init__(self, nodes: int, edges: Iterable[Edge], relays: int) -> None:
        self.cyclic: list[int] = []
        with gc_paused():
            self.flags = _direct_flags(nodes, edges, relays, self.cyclic)


def _direct_flags(
    nodes: int, edges: Iterable[Edge], relays: int, cyclic: list[int] | None = None
) -> list[bool] | None:
    """The flags of `edges`, in order (iterated several times: a sequence or Pairs)."""
    component, count = _components(nodes, *_adjacency(nodes, edges))
    if relays < nodes:
        sizes = [0] * count
        for c in component:
            sizes[c] += 1
        found = [r for r in range(relays, nodes) if sizes[component[r]] > 1]
        if found:
            assert cyclic is not None
            cyclic += found
            return None
    # the components each component has an edge to (lists: a set is 216 bytes empty)
    next_components: list[list[int]] = [[] for _ in range(count)]
    for a, b in edges:
        if component[a] != component[b]:
            next_components[component[a]].append(component[b])
    for c, targets in enumerate(next_components):
        if len(targets) > 1:
            next_components[c] = list(dict.fromkeys(targets))
    if count <= EXACT_LIMIT:
        implied = _reached(next_components)
        return [
            (ca := component[a]) == (cb := component[b]) or cb not in implied[ca] for a, b in edges
        ]
    # one step: u -> v is implied when another successor of u's component has an edge to
    # v's. Asked edge by edge, of each successor's list (a set when long): a set of what
    # each component reaches in two steps would be millions of entries on a big state.
    lookup: list[list[int] | set[int]] = [
        set(targets) if len(targets) > 8 else targets for targets in next_components
    ]
    # a relay reaches in one step what its successors do
    for relay in range(relays, nodes):
        through: set[int] = set()
        for d in next_components[component[relay]]:
            through.update(next_components[d])
        lookup[component[relay]] = through
    return [
        (ca := component[a]) == (cb := component[b])
        or not any(cb in lookup[d] for d in next_components[ca])
        for a, b in edges
    ]


class _Bits:
    """A set of component numbers as one int: `in` tests a bit."""

    __slots__ = ("bits",)

    def __init__(self, bits: int) -> None:
        self.bits = bits

    def __contains__(self, member: int) -> bool:
        return bool(self.bits >> member & 1)


def _reached(next_components: list[list[int]]) -> list[_Bits]:
    """What each component reaches through its successors (exact)."""
    reach: list[int] = []  # what each component reaches, itself excluded
    implied: list[_Bits] = []
    # Tarjan numbers components sinks first: every successor is done before its source
    for successors in next_components:
        through = own = 0
        for d in successors:
            through |= reach[d]
            own |= 1 << d
        reach.append(through | own)
        implied.append(_Bits(through))
    return implied


def _adjacency(nodes: int, edges: Iterable[Edge]) -> tuple["array.array[int]", "array.array[int]"]:
    """Each node's successors as arrays: `node`'s are targets[offsets[node]:offsets[node + 1]]
    (a list per node, and an int per edge in them, would be several times their size)."""
    offsets = array.array("q", bytes(8 * (nodes + 1)))
    sources = edges.sources if isinstance(edges, Pairs) else [a for a, _ in edges]
    for a in sources:
        offsets[a + 1] += 1
    for node in range(nodes):
        offsets[node + 1] += offsets[node]
    if isinstance(edges, Pairs) and all(map(operator.le, sources, sources[1:])):
        return offsets, edges.targets  # in order of their sources already (grain's are)
    targets = array.array("q", bytes(8 * offsets[nodes]))
    placed = offsets[:-1]  # where each node's next successor goes
    for a, b in edges:
        targets[placed[a]] = b
        placed[a] += 1
    return offsets, targets


def _components(
    nodes: int, offsets: "array.array[int]", targets: "array.array[int]"
) -> tuple[list[int], int]:
    """Tarjan's strongly connected components, iteratively (graphs are deep): the
    component of each node, numbered in the order found (sinks first), and the count.
    The successors of `node` are targets[offsets[node]:offsets[node + 1]]."""
    index = [-1] * nodes
    low = [0] * nodes
    component = [-1] * nodes
    stack: list[int] = []
    on_stack = [False] * nodes
    counter = count = 0
    for root in range(nodes):
        if index[root] != -1:
            continue
        work = [(root, -1)]  # (node, the position of its next successor; -1: first visit)
        while work:
            node, at = work.pop()
            if at < 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack[node] = True
                at = offsets[node]
            else:  # back from the successor before `at`
                low[node] = min(low[node], low[targets[at - 1]])
            end = offsets[node + 1]
            while at < end:
                nxt = targets[at]
                if index[nxt] == -1:
                    work.append((node, at + 1))
                    work.append((nxt, -1))
                    break
                if on_stack[nxt]:
                    low[node] = min(low[node], index[nxt])
                at += 1
            else:
                if low[node] == index[node]:
                    while True:
                        member = stack.pop()
                        on_stack[member] = False
                        component[member] = count
                        if member == node:
                            break
                    count += 1
    return component, count
