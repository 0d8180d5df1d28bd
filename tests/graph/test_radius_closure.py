"""A blast radius' members are the closure of the declared dependencies, whatever their
depth: against networkx on random graphs (cycles, self-references, lists closed as
Terraform writes them or not, a second version that changes them), both directions,
single state and across states. Depth is the shortest distance over the transitive
reduction; with a maxDepth, `total + beyond` is the closure's size."""

import itertools
import uuid

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.graph.across import cross_blast_radius
from app.graph.edges import Direction, blast_radius, path_addresses
from app.graph.write.version import write_version
from app.tfstate.remote import Server
from tests.helpers.links import remote
from tests.helpers.states import BUILTIN, WALK_LIMITS, resource, state

T = "terraform_data."
SERVERS = [Server.parse("https://infragraph.example/tf")]
DATA = "data.terraform_remote_state.up"  # the consumer's view of the producer

Graph = dict[str, set[str]]  # each resource's name -> the names it declares


@st.composite
def graphs(draw: st.DrawFn, names: list[str]) -> Graph:
    """Dependency lists over `names` with cycles and self-references; closed (each list
    holds everything reachable, as Terraform writes them) or not."""
    nodes = draw(st.lists(st.sampled_from(names), min_size=1, max_size=12, unique=True))
    depends = {n: set(draw(st.lists(st.sampled_from(nodes), max_size=3))) for n in nodes}
    if draw(st.booleans()):
        declared = _graph(depends)
        depends = {n: set(nx.descendants(declared, n)) for n in nodes}
    return depends


def _graph(depends: Graph, prefix: str = "") -> nx.DiGraph:
    """Edges from each resource to what it declares, names with `prefix`."""
    graph = nx.DiGraph()
    graph.add_nodes_from(prefix + n for n in depends)
    graph.add_edges_from((prefix + n, prefix + d) for n, ds in depends.items() for d in ds)
    return graph


def _reduction(graph: nx.DiGraph) -> nx.DiGraph:
    """The transitive reduction of a graph with cycles: every edge within a strongly
    connected component, and between components those of the condensation's reduction."""
    condensed = nx.condensation(graph)
    component = condensed.graph["mapping"]
    kept = set(nx.transitive_reduction(condensed).edges)
    reduced = nx.DiGraph()
    reduced.add_nodes_from(graph)
    reduced.add_edges_from(
        (a, b)
        for a, b in graph.edges
        if component[a] == component[b] or (component[a], component[b]) in kept
    )
    return reduced


def _expected(
    declared: nx.DiGraph, root: str, direction: Direction
) -> tuple[dict[str, int], nx.DiGraph]:
    """Each member of the root's radius (the declared closure) with its depth (the
    shortest distance over the reduction), and the reduction, the walk's way."""
    if direction is Direction.DEPENDENTS:  # what declares the root: edges backwards
        declared = declared.reverse(copy=True)
    members = nx.descendants(declared, root) - {root}
    reduced = _reduction(declared)
    depths = nx.single_source_shortest_path_length(reduced, root)
    return {m: depths[m] for m in members}, reduced


def _check_paths(reduced: nx.DiGraph, rows: list[tuple[str, int, list[str]]], root: str) -> None:
    """Each path runs from the root to its resource, one direct hop per depth."""
    for address, depth, path in rows:
        assert path[0] == root and path[-1] == address and len(path) == depth + 1
        assert all(reduced.has_edge(near, far) for near, far in itertools.pairwise(path))


def _body(depends: Graph, serial: int, **extra: object) -> bytes:
    return state(
        [
            resource(
                "terraform_data",
                n,
                provider=BUILTIN,
                attributes={"id": f"ident-{n}-{serial:04d}-0a1b2c3d"},
                depends_on=[T + d for d in sorted(ds)],
            )
            for n, ds in depends.items()
        ],
        serial=serial,
        **extra,  # type: ignore[arg-type]
    )


NAMES = [f"n{i}" for i in range(14)]


@given(
    versions=st.lists(graphs(NAMES), min_size=1, max_size=2),
    limit=st.integers(1, 4),
    data=st.data(),
)
@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
async def test_the_radius_is_the_declared_closure_at_its_shortest_direct_depths(
    pool, versions, limit, data
) -> None:
    name = f"closure/{uuid.uuid4()}"
    async with pool.acquire() as conn:
        for serial, depends in enumerate(versions, start=1):
            written = await write_version(conn, name, _body(depends, serial), actor="test")
        declared = _graph(depends, T)
        ids = {
            r["address"]: (r["id"], written.version_id)
            for r in await conn.fetch(
                """SELECT id, address FROM resources
                   WHERE state_id = $1 AND serial_to IS NULL""",
                written.state_id,
            )
        }
        root = T + data.draw(st.sampled_from(sorted(depends)))
        await _assert_radius(conn, declared, ids, root, limit)


async def _assert_radius(
    conn: object, declared: nx.DiGraph, ids: dict[str, tuple], root: str, limit: int
) -> None:
    """The root's radius both ways, whole and within `limit`, is the declared closure at
    the reduction's shortest depths, with paths over it."""
    for direction in Direction:
        expected, reduced = _expected(declared, root, direction)
        for max_depth in (None, limit):
            page = (
                await blast_radius(
                    conn,  # type: ignore[arg-type]
                    [ids[root]],
                    direction,
                    limits=WALK_LIMITS,
                    max_depth=max_depth,
                    first=1000,
                )
            ).get(ids[root])
            rows = [
                (r["address"], r["depth"], path_addresses(r["path"]))
                for r in (page.rows if page else [])
            ]
            within = {m: d for m, d in expected.items() if max_depth is None or d <= max_depth}
            assert {a: d for a, d, _ in rows} == within
            assert len(rows) == len(within)  # each once
            total, beyond = (page.total, page.beyond) if page else (0, 0)
            assert (total, total + beyond) == (len(within), len(expected))
            _check_paths(reduced, rows, root)


Keys = dict[str, list[int] | list[str] | None]  # each resource's instance keys (None: one)


@st.composite
def instance_keys(draw: st.DrawFn, names: list[str]) -> Keys:
    """Count (ints) or for_each (strings) instances, or a single one, per resource."""
    shapes = st.sampled_from([None, [0], [0, 1], [0, 1, 2], ["a"], ["a", "b"], ["a", "b", "c"]])
    return {n: draw(shapes) for n in names}


def _instances(name: str, keys: Keys) -> list[str]:
    found = keys[name]
    if found is None:
        return [T + name]
    return [T + name + (f"[{k}]" if isinstance(k, int) else f'["{k}"]') for k in found]


def _instance_graph(depends: Graph, keys: Keys) -> nx.DiGraph:
    """Each instance's edges to every instance of each resource it declares (itself
    left out): the edges a dependency list stands for."""
    graph = nx.DiGraph()
    for n, ds in depends.items():
        for a in _instances(n, keys):
            graph.add_node(a)
            graph.add_edges_from((a, b) for d in ds for b in _instances(d, keys) if b != a)
    return graph


@given(
    versions=st.lists(st.tuples(graphs(NAMES), instance_keys(NAMES)), min_size=1, max_size=2),
    limit=st.integers(1, 4),
    data=st.data(),
)
@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
async def test_with_count_and_for_each_the_radius_is_the_closure_of_the_instance_edges(
    pool, versions, limit, data
) -> None:
    """Declared edges name resources: stored at that grain, read as edges to each of the
    resource's instances (those of the version read)."""
    name = f"closure-keyed/{uuid.uuid4()}"
    async with pool.acquire() as conn:
        for serial, (depends, keys) in enumerate(versions, start=1):
            body = state(
                [
                    resource(
                        "terraform_data",
                        n,
                        provider=BUILTIN,
                        keys=keys[n],
                        attributes={"id": f"ident-{n}"},  # unchanged rows are kept
                        depends_on=[T + d for d in sorted(ds)],
                    )
                    for n, ds in depends.items()
                ],
                serial=serial,
            )
            written = await write_version(conn, name, body, actor="test")
        declared = _instance_graph(depends, keys)
        ids = {
            r["address"]: (r["id"], written.version_id)
            for r in await conn.fetch(
                """SELECT id, address FROM resources
                   WHERE state_id = $1 AND serial_to IS NULL""",
                written.state_id,
            )
        }
        root = data.draw(st.sampled_from(sorted(declared)))
        await _assert_radius(conn, declared, ids, root, limit)


@given(
    producer=graphs(NAMES),
    consumer=graphs(NAMES),
    data=st.data(),
)
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
async def test_across_states_the_radius_is_the_declared_closure_through_the_links(
    pool, producer, consumer, data
) -> None:
    """The producer's output carries one of its resources' ids; the consumer reads it
    through a data source some of its resources declare: a link, one hop."""
    run = uuid.uuid4().hex[:8]
    up, down = f"up-{run}", f"down-{run}"
    source = data.draw(st.sampled_from(sorted(producer)))
    readers = data.draw(st.lists(st.sampled_from(sorted(consumer)), min_size=1, unique=True))
    value = f"ident-{source}-0001-0a1b2c3d"
    consumer_body = state(
        [
            remote("up", f"https://infragraph.example/tf/states/{up}", {"out": value}),
            *(
                resource(
                    "terraform_data",
                    n,
                    provider=BUILTIN,
                    attributes={"id": f"other-{n}-0002"},
                    depends_on=[T + d for d in sorted(ds)] + ([DATA] if n in readers else []),
                )
                for n, ds in consumer.items()
            ),
        ]
    )
    outputs = {"out": {"value": value, "type": "string"}}
    async with pool.acquire() as conn:
        await write_version(conn, up, _body(producer, 1, outputs=outputs), actor="test")
        await write_version(conn, down, consumer_body, actor="test", servers=SERVERS)
        declared = nx.union(_graph(producer, f"{up}:{T}"), _graph(consumer, f"{down}:{T}"))
        declared.add_edges_from((f"{down}:{T}{n}", f"{down}:{DATA}") for n in readers)
        declared.add_edge(f"{down}:{DATA}", f"{up}:{T}{source}")  # the link
        keys = {
            f"{r['name']}:{r['address']}": (r["id"], r["version_id"])
            for r in await conn.fetch(
                """SELECT s.name, r.address, r.id, v.id AS version_id
                   FROM states s JOIN state_versions v ON v.state_id = s.id
                   JOIN resources r ON r.state_id = s.id
                   WHERE s.name = ANY($1::text[])""",
                [up, down],
            )
        }
        root = data.draw(st.sampled_from(sorted(keys)))
        limit = data.draw(st.integers(1, 4))
        for direction in Direction:
            expected, reduced = _expected(declared, root, direction)
            for max_depth in (None, limit):
                page = (
                    await cross_blast_radius(
                        conn, [keys[root]], direction, max_depth=max_depth, first=1000
                    )
                ).get(keys[root])
                rows = [
                    (
                        f"{r['state_name']}:{r['address']}",
                        r["depth"],
                        [f"{s}:{a}" for s, a in zip(r["path_states"], r["path"], strict=True)],
                    )
                    for r in (page.rows if page else [])
                ]
                within = {m: d for m, d in expected.items() if max_depth is None or d <= max_depth}
                assert {a: d for a, d, _ in rows} == within
                total, beyond = (page.total, page.beyond) if page else (0, 0)
                assert (total, total + beyond) == (len(within), len(expected))
                _check_paths(reduced, rows, root)
