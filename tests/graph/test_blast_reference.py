"""Blast radius against a plain-Python breadth-first search on generated graphs: cycles,
diamonds, addresses that are prefixes of one another or hold control bytes. The walk
follows direct edges: the reference reduces the graph with networkx (its transitive
reduction of the graph of strongly connected components; edges inside one are kept)."""

import uuid

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.graph.edges import Direction, blast_radius, path_addresses
from app.graph.write.version import write_version
from tests.helpers.states import BUILTIN, WALK_LIMITS, resource, state

T = "terraform_data."
# `\x01` and `\x02` are the path encoding's own bytes; "a" < "a_" < "ab" byte-wise.
names = st.text(alphabet="ab_\x01\x02é", min_size=1, max_size=3)


@st.composite
def graphs(draw: st.DrawFn) -> tuple[list[str], dict[str, set[str]]]:
    """Resource names and, for each, the names it depends on."""
    nodes = draw(st.lists(names, min_size=1, max_size=10, unique=True))
    depends = {n: set(draw(st.lists(st.sampled_from(nodes), max_size=4))) - {n} for n in nodes}
    return nodes, depends


def direct_only(nodes: list[str], depends: dict[str, set[str]]) -> dict[str, set[str]]:
    """The edges of `depends` that no other path implies."""
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from((n, d) for n in nodes for d in depends[n])
    condensed = nx.condensation(graph)
    component = condensed.graph["mapping"]
    reduced = set(nx.transitive_reduction(condensed).edges)
    return {
        n: {
            d
            for d in depends[n]
            if component[n] == component[d] or (component[n], component[d]) in reduced
        }
        for n in nodes
    }


def reference(
    hops: dict[str, set[str]], root: str, max_depth: int
) -> list[tuple[str, int, list[str]]]:
    """(address, depth, path) by depth then address: each reachable resource once, at its
    shortest depth, by the smallest of its shortest paths (lists of addresses compare
    as Python strings do, by code point: the byte order of UTF-8, COLLATE "C")."""
    level, seen, found = {root: [T + root]}, {root}, []
    for depth in range(1, max_depth + 1):
        nearest: dict[str, list[str]] = {}
        for node, path in level.items():
            for far in hops[node] - seen:
                candidate = [*path, T + far]
                if far not in nearest or candidate < nearest[far]:
                    nearest[far] = candidate
        seen |= nearest.keys()
        found += [(T + n, depth, p) for n, p in nearest.items()]
        level = nearest
    return sorted(found, key=lambda row: (row[1], row[0].encode()))


@given(graph=graphs(), max_depth=st.integers(1, 6), data=st.data())
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
async def test_blast_radius_is_the_breadth_first_reference(pool, graph, max_depth, data) -> None:
    nodes, declared = graph
    depends = direct_only(nodes, declared)
    dependents = {n: {m for m in nodes if n in depends[m]} for n in nodes}
    body = state(
        [
            resource(
                "terraform_data",
                n,
                provider=BUILTIN,
                depends_on=[T + d for d in sorted(declared[n])],
            )
            for n in nodes
        ]
    )
    roots = data.draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=3, unique=True))
    name = f"generated/{uuid.uuid4()}"
    async with pool.acquire() as conn:
        written = await write_version(conn, name, body, actor="test")
        ids = {
            r["address"].removeprefix(T): (r["id"], written.version_id)
            for r in await conn.fetch(
                "SELECT id, address FROM resources WHERE state_id = $1", written.state_id
            )
        }
        for direction, hops in (
            (Direction.DEPENDENTS, dependents),
            (Direction.DEPENDENCIES, depends),
        ):
            first = data.draw(st.integers(1, 12))
            pages = await blast_radius(
                conn,
                [ids[r] for r in roots],
                direction,
                max_depth=max_depth,
                limits=WALK_LIMITS,
                first=first,
            )
            for root in roots:
                expected = reference(hops, root, max_depth)
                page = pages.get(ids[root])
                got = (
                    [(r["address"], r["depth"], path_addresses(r["path"])) for r in page.rows]
                    if page
                    else []
                )
                assert got == expected[:first]
                assert (page.total if page else 0) == len(expected)
            walked, after = [], None  # the first root's radius, page by page
            while True:
                pages = await blast_radius(
                    conn,
                    [ids[roots[0]]],
                    direction,
                    max_depth=max_depth,
                    limits=WALK_LIMITS,
                    first=first,
                    after=after,
                )
                page = pages.get(ids[roots[0]])
                if page is None:
                    break
                walked += [(r["address"], r["depth"], path_addresses(r["path"])) for r in page.rows]
                if not page.has_next:
                    break
                after = page.keys[-1]
            assert walked == reference(hops, roots[0], max_depth)
