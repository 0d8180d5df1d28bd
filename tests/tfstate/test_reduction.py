"""Direct edges: the transitive reduction, against networkx's on random graphs."""

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.tfstate import reduction
from app.tfstate.reduction import direct_edges


@st.composite
def dags(draw: st.DrawFn) -> tuple[int, list[tuple[int, int]]]:
    nodes = draw(st.integers(1, 25))
    pairs = st.tuples(st.integers(0, nodes - 1), st.integers(0, nodes - 1))
    edges = {(max(a, b), min(a, b)) for a, b in draw(st.lists(pairs, max_size=60)) if a != b}
    return nodes, sorted(edges)


def _reference(nodes: int, edges: list[tuple[int, int]]) -> set[tuple[int, int]]:
    graph = nx.DiGraph()
    graph.add_nodes_from(range(nodes))
    graph.add_edges_from(edges)
    return set(nx.transitive_reduction(graph).edges)


@given(dag=dags())
def test_direct_edges_are_networkx_transitive_reduction(dag) -> None:
    nodes, edges = dag
    assert direct_edges(nodes, edges) == _reference(nodes, edges)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dag=dags())
def test_on_closed_graphs_one_step_is_the_reduction_too(dag, monkeypatch) -> None:
    nodes, edges = dag
    monkeypatch.setattr(reduction, "EXACT_LIMIT", 30_000)
    graph = nx.DiGraph(edges)
    graph.add_nodes_from(range(nodes))
    closed = sorted(nx.transitive_closure_dag(graph).edges)  # what Terraform writes
    exact = direct_edges(nodes, closed)
    monkeypatch.setattr(reduction, "EXACT_LIMIT", 0)
    assert direct_edges(nodes, closed) == exact == _reference(nodes, closed)


def test_terraforms_closed_chain_has_depth() -> None:
    # d: [a, b, c], c: [a, b], b: [a] (a=0, b=1, c=2, d=3)
    closed = [(3, 0), (3, 1), (3, 2), (2, 0), (2, 1), (1, 0)]
    assert direct_edges(4, closed) == {(3, 2), (2, 1), (1, 0)}


def test_cycles_keep_their_edges_and_reduce_around_them() -> None:
    # a cycle b -> c -> d -> b; a -> b and a -> c (implied through b); e -> a
    edges = [(1, 2), (2, 3), (3, 1), (0, 1), (0, 2), (4, 0), (4, 1)]
    assert direct_edges(5, edges) == {(1, 2), (2, 3), (3, 1), (0, 1), (0, 2), (4, 0)}
    # a -> c stays: b and c are one component, so neither edge into it implies the other


def test_a_deep_chain_does_not_overflow_the_stack() -> None:
    chain = [(i + 1, i) for i in range(50_000)]
    assert direct_edges(50_001, chain) == set(chain)


@st.composite
def graphs(draw: st.DrawFn) -> tuple[int, list[tuple[int, int]]]:
    """Any directed graph: cycles, self-loops, lists closed or not."""
    nodes = draw(st.integers(1, 25))
    pairs = st.tuples(st.integers(0, nodes - 1), st.integers(0, nodes - 1))
    return nodes, sorted(set(draw(st.lists(pairs, max_size=60))))


def _reach(nodes: int, edges: object) -> set[tuple[int, int]]:
    graph = nx.DiGraph()
    graph.add_nodes_from(range(nodes))
    graph.add_edges_from(edges)  # type: ignore[arg-type]
    return {(a, b) for a in range(nodes) for b in nx.descendants(graph, a)}


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(graph=graphs(), exact=st.booleans())
def test_direct_edges_reach_whatever_the_declared_ones_reach(graph, exact, monkeypatch) -> None:
    """A blast radius walks direct edges for its members: exact or one step, with cycles
    or not, they reach every resource the declared edges do."""
    nodes, edges = graph
    monkeypatch.setattr(reduction, "EXACT_LIMIT", 30_000 if exact else 0)
    assert _reach(nodes, direct_edges(nodes, edges)) == _reach(nodes, edges)
