"""Dependencies, dependents and blast radius over a hand-built graph."""

import pytest

from app.errors import BadInput
from app.graph.edges import Direction, blast_radius, neighbours, path_addresses
from app.graph.resources import find_resource
from app.graph.write.version import write_version
from tests.helpers.states import WALK_LIMITS, chain_graph

T = "terraform_data."


def _chain(first: int, last: int) -> list[str]:
    return [f"k{i:02d}" for i in range(first, last + 1)]


async def _ids(conn) -> dict[str, object]:
    await write_version(conn, "g", chain_graph(), actor="test")
    rows = await conn.fetch("SELECT id, state_version_id, address FROM resources")
    # a resource is read at a version: (row id, version id); here each row's only one
    return {r["address"].removeprefix(T): (r["id"], r["state_version_id"]) for r in rows}


def _radius(page) -> list[tuple[str, int, list[str]]]:
    return [
        (
            r["address"].removeprefix(T),
            r["depth"],
            [a.removeprefix(T) for a in path_addresses(r["path"])],
        )
        for r in page.rows
    ]


async def test_dependents_diamond_cycle_chain(conn) -> None:
    ids = await _ids(conn)
    page = (await blast_radius(conn, [ids["r"]], limits=WALK_LIMITS, first=100, max_depth=12))[
        ids["r"]
    ]
    assert _radius(page) == [
        ("b", 1, ["r", "b"]),
        ("c", 1, ["r", "c"]),
        ("k01", 1, ["r", "k01"]),
        ("d", 2, ["r", "b", "d"]),  # two shortest paths: the smaller one is kept
        ("k02", 2, ["r", "k01", "k02"]),
        ("e", 3, ["r", "b", "d", "e"]),
        *[(k, i, ["r", *_chain(1, i)]) for i, k in enumerate(_chain(3, 3), start=3)],
        ("f", 4, ["r", "b", "d", "e", "f"]),  # f -> d closes the cycle: not entered again
        *[(k, i, ["r", *_chain(1, i)]) for i, k in enumerate(_chain(4, 12), start=4)],
    ]
    assert page.total == 17 and not page.has_next


async def test_the_whole_radius_by_default_and_a_limit_counts_what_it_cuts(conn) -> None:
    ids = await _ids(conn)
    whole = (await blast_radius(conn, [ids["r"]], limits=WALK_LIMITS, first=100))[ids["r"]]
    assert max(r["depth"] for r in whole.rows) == 12 and whole.total == 17 and whole.beyond == 0
    shallow = (await blast_radius(conn, [ids["r"]], limits=WALK_LIMITS, first=100, max_depth=2))[
        ids["r"]
    ]
    assert [a for a, _, _ in _radius(shallow)] == ["b", "c", "k01", "d", "k02"]
    assert (shallow.total, shallow.beyond, shallow.has_next) == (5, 12, False)
    paged, after = [], None  # a limit's pages end at it, from the same kept walk
    while True:
        page = (
            await blast_radius(
                conn, [ids["r"]], limits=WALK_LIMITS, first=2, max_depth=3, after=after
            )
        )[ids["r"]]
        assert (page.total, page.beyond) == (7, 10)
        paged += _radius(page)
        if not page.has_next:
            break
        after = page.keys[-1]
    assert paged == _radius(whole)[:7]
    assert await conn.fetchval("SELECT count(*) FROM blast_walks") == 1
    deep = await blast_radius(conn, [ids["r"]], limits=WALK_LIMITS, first=100, max_depth=51)
    assert _radius(deep[ids["r"]]) == _radius(whole) and deep[ids["r"]].beyond == 0
    with pytest.raises(BadInput):
        await blast_radius(conn, [ids["r"]], limits=WALK_LIMITS, first=10, max_depth=0)


async def test_dependencies_walk_forwards(conn) -> None:
    ids = await _ids(conn)
    page = (
        await blast_radius(conn, [ids["d"]], Direction.DEPENDENCIES, limits=WALK_LIMITS, first=100)
    )[ids["d"]]
    assert _radius(page) == [
        ("b", 1, ["d", "b"]),
        ("c", 1, ["d", "c"]),
        ("f", 1, ["d", "f"]),
        ("e", 2, ["d", "f", "e"]),  # e -> d: back to the root, not entered
        ("r", 2, ["d", "b", "r"]),
    ]
    leaf = await blast_radius(
        conn, [ids["k12"]], Direction.DEPENDENTS, limits=WALK_LIMITS, first=100
    )
    assert leaf == {}  # nothing depends on the end of the chain: an empty radius


async def test_many_roots_in_one_statement_and_keyset_pages(conn) -> None:
    ids = await _ids(conn)
    roots = [ids["r"], ids["d"], ids["k10"]]
    together = await blast_radius(conn, roots, limits=WALK_LIMITS, first=100)
    for root in roots:
        alone = (await blast_radius(conn, [root], limits=WALK_LIMITS, first=100))[root]
        assert _radius(together[root]) == _radius(alone)
    walked, after = [], None
    while True:
        page = (await blast_radius(conn, [ids["r"]], limits=WALK_LIMITS, first=4, after=after))[
            ids["r"]
        ]
        assert page.total == 17
        walked += _radius(page)
        if not page.has_next:
            break
        after = page.keys[-1]
    assert walked == _radius(together[ids["r"]])


async def test_direct_neighbours(conn) -> None:
    ids = await _ids(conn)
    deps = await neighbours(conn, [ids["d"], ids["r"]], Direction.DEPENDENCIES, first=2)
    assert [r["address"] for r in deps[ids["d"]].rows] == [T + "b", T + "c"]
    assert deps[ids["d"]].total == 3 and deps[ids["d"]].has_next
    assert ids["r"] not in deps  # r depends on nothing
    after = deps[ids["d"]].keys[-1]
    rest = await neighbours(conn, [ids["d"]], Direction.DEPENDENCIES, first=2, after=after)
    assert [r["address"] for r in rest[ids["d"]].rows] == [T + "f"]
    dependents = await neighbours(conn, [ids["r"]], Direction.DEPENDENTS, first=10)
    assert [r["address"] for r in dependents[ids["r"]].rows] == [T + "b", T + "c", T + "k01"]
    found = await find_resource(conn, "g", T + "d")
    assert (
        (found["id"], found["version_id"]) == ids["d"]
        and found["state_name"] == "g"
        and found["serial"] == 1
    )
