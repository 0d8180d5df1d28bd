"""Kept blast-radius walks: the first page walks, the next ones read their slice. Shared by
batched roots, never stale across versions, expired by age and size (a cursor of an
expired walk walks again), kept once under concurrency, deleted with their state or
their pruned version."""

import asyncio
import contextlib
from collections.abc import Iterator

import asyncpg
import pytest

from app.errors import BadInput
from app.graph.edges import WalkLimits, blast_radius, path_addresses
from app.graph.resources import ResourceKey
from app.graph.retention import prune_state
from app.graph.states import delete_state
from app.graph.write.version import write_version
from tests.helpers.states import WALK_LIMITS, chain_graph
from tests.helpers.waiting import until_waiting_on

T = "terraform_data."


async def _keys(conn: asyncpg.Connection, name: str = "g", body: bytes | None = None) -> dict:
    """Each resource's key at the version just written, by name (`terraform_data.<name>`)."""
    written = await write_version(conn, name, body or chain_graph(), actor="test")
    rows = await conn.fetch(
        """SELECT id, address FROM resources
           WHERE state_id = $1 AND serial_from <= $2 AND (serial_to IS NULL OR serial_to > $2)""",
        written.state_id,
        written.serial,
    )
    return {r["address"].removeprefix(T): (r["id"], written.version_id) for r in rows}


@contextlib.contextmanager
def _walks(conn: asyncpg.Connection) -> Iterator[list[str]]:
    """The walks (recursive statements) `conn` runs in the block."""
    walked: list[str] = []

    def log(query: asyncpg.connection.LoggedQuery) -> None:
        if "WITH RECURSIVE bfs" in query.query:  # not asyncpg's own type queries
            walked.append(query.query)

    conn.add_query_logger(log)
    try:
        yield walked
    finally:
        conn.remove_query_logger(log)


async def _pages(
    conn: asyncpg.Connection, root: ResourceKey, first: int, limits: WalkLimits = WALK_LIMITS
) -> list[tuple[int, str, list[str]]]:
    """A radius page by page: (depth, address, path)."""
    rows, after = [], None
    while True:
        page = (await blast_radius(conn, [root], limits=limits, first=first, after=after))[root]
        rows += [
            (r["depth"], r["address"].removeprefix(T), path_addresses(r["path"])) for r in page.rows
        ]
        if not page.has_next:
            return rows
        after = page.keys[-1]


async def _kept(conn: asyncpg.Connection) -> dict[str, tuple[int, bool, int]]:
    """Each kept walk, by its root's name: (total, rows kept, rows in blast_walk_rows)."""
    records = await conn.fetch(
        """SELECT r.address, w.total, w.kept,
                  (SELECT count(*) FROM blast_walk_rows x
                   WHERE x.state_id = w.state_id AND x.walk_id = w.id) AS rows
           FROM blast_walks w JOIN resources r ON r.id = w.root_id AND r.state_id = w.state_id"""
    )
    return {r["address"].removeprefix(T): (r["total"], r["kept"], r["rows"]) for r in records}


async def test_the_first_page_walks_and_the_next_ones_read_their_slice(conn) -> None:
    ids = await _keys(conn)
    with _walks(conn) as walked:
        paged = await _pages(conn, ids["r"], first=4)
        assert len(walked) == 1  # 4 pages, one walk
        whole = (await blast_radius(conn, [ids["r"]], limits=WALK_LIMITS, first=100))[ids["r"]]
        assert len(walked) == 1
    assert paged == [
        (r["depth"], r["address"].removeprefix(T), path_addresses(r["path"])) for r in whole.rows
    ]
    assert len(paged) == len({a for _, a, _ in paged}) == whole.total == 17
    assert await _kept(conn) == {"r": (17, True, 17)}


async def test_batched_roots_share_the_kept_walks(conn) -> None:
    ids = await _keys(conn)
    with _walks(conn) as walked:
        together = await blast_radius(
            conn, [ids["r"], ids["k01"]], limits=WALK_LIMITS, first=2
        )  # one statement walks both
        alone = await blast_radius(
            conn, [ids["k01"]], limits=WALK_LIMITS, first=2, after=together[ids["k01"]].keys[-1]
        )
        assert len(walked) == 1
        # a batch walks only its roots not kept yet: r is, b is not
        await blast_radius(conn, [ids["r"], ids["b"]], limits=WALK_LIMITS, first=2)
        assert len(walked) == 2
    assert [r["address"] for r in alone[ids["k01"]].rows] == [T + "k04", T + "k05"]
    assert await _kept(conn) == {"r": (17, True, 17), "k01": (11, True, 11), "b": (3, True, 3)}


async def test_a_cursor_pages_its_version_and_a_new_walk_sees_the_new_one(conn) -> None:
    v1 = await _keys(conn)
    first = (await blast_radius(conn, [v1["r"]], limits=WALK_LIMITS, first=4))[v1["r"]]
    v2 = await _keys(conn, body=chain_graph(serial=2, grown=True))  # written between two pages
    assert v2["r"][0] == v1["r"][0]  # the root's row is shared by both versions
    rest = await blast_radius(conn, [v1["r"]], limits=WALK_LIMITS, first=100, after=first.keys[-1])
    paged = [r["address"].removeprefix(T) for r in [*first.rows, *rest[v1["r"]].rows]]
    assert paged[:4] == ["b", "c", "k01", "d"] and "a" not in paged and len(paged) == 17
    assert rest[v1["r"]].total == 17 and {r["serial"] for r in rest[v1["r"]].rows} == {1}
    new = (await blast_radius(conn, [v2["r"]], limits=WALK_LIMITS, first=4))[v2["r"]]
    assert [r["address"] for r in new.rows] == [T + "a", T + "b", T + "c", T + "k01"]
    assert new.total == 18
    with pytest.raises(BadInput, match="serial 1"):  # a cursor of v1 on the root at v2
        await blast_radius(conn, [v2["r"]], limits=WALK_LIMITS, first=4, after=first.keys[-1])


async def test_an_expired_walk_walks_again_under_its_cursor(conn) -> None:
    ids = await _keys(conn)
    first = (await blast_radius(conn, [ids["r"]], limits=WALK_LIMITS, first=4))[ids["r"]]
    await conn.execute("UPDATE blast_walks SET created_at = now() - interval '2 hours'")
    # keeping another walk expires r's (older than an hour)
    await blast_radius(conn, [ids["d"]], limits=WalkLimits(rows=1000, seconds=3600), first=1)
    assert await _kept(conn) == {"d": (2, True, 2)}
    with _walks(conn) as walked:
        rest = await blast_radius(
            conn, [ids["r"]], limits=WALK_LIMITS, first=100, after=first.keys[-1]
        )
        assert len(walked) == 1
    paged = [r["address"] for r in [*first.rows, *rest[ids["r"]].rows]]
    assert len(paged) == len(set(paged)) == rest[ids["r"]].total == 17


async def test_walks_past_the_row_limit_go_oldest_first_but_the_newest_stays(conn) -> None:
    ids = await _keys(conn)
    limits = WalkLimits(rows=20, seconds=3600)  # a walk counts its rows and one
    await blast_radius(conn, [ids["r"]], limits=limits, first=1)  # 18
    await blast_radius(conn, [ids["k01"]], limits=limits, first=1)  # 12: r goes
    assert await _kept(conn) == {"k01": (11, True, 11)}
    await blast_radius(conn, [ids["k10"]], limits=limits, first=1)  # 3: 15 in all
    assert set(await _kept(conn)) == {"k01", "k10"}
    await blast_radius(conn, [ids["r"]], limits=WalkLimits(rows=5, seconds=3600), first=1)
    assert await _kept(conn) == {"r": (17, True, 17)}  # bigger than the limit, newest


async def test_a_total_alone_counts_without_keeping_rows(conn) -> None:
    ids = await _keys(conn)
    with _walks(conn) as walked:
        counted = await blast_radius(conn, [ids["r"]], limits=WALK_LIMITS, first=4, rows=False)
        assert counted[ids["r"]].total == 17 and counted[ids["r"]].rows == []
        assert "path" not in walked[0]  # a walk that skips paths
        assert await _kept(conn) == {"r": (17, False, 0)}
        await blast_radius(conn, [ids["r"]], limits=WALK_LIMITS, first=4, rows=False)
        assert len(walked) == 1  # the count was kept
        page = (await blast_radius(conn, [ids["r"]], limits=WALK_LIMITS, first=4))[ids["r"]]
        assert len(walked) == 2 and len(page.rows) == 4  # rows wanted: walked, kept
        assert await _kept(conn) == {"r": (17, True, 17)}
        await blast_radius(conn, [ids["r"]], limits=WALK_LIMITS, first=4, rows=False)
        assert len(walked) == 2  # a kept walk has its total


async def test_two_requests_for_one_unkept_walk_keep_it_once(pool, conn) -> None:
    ids = await _keys(conn)

    async def request() -> list:
        async with pool.acquire() as other:
            page = await blast_radius(other, [ids["r"]], limits=WALK_LIMITS, first=100)
        return [(r["depth"], r["address"], path_addresses(r["path"])) for r in page[ids["r"]].rows]

    # The first request to walk stops at its insert until the table lock goes; the second,
    # arrived meanwhile, waits for the first's walk: it finds it kept and reads it.
    async with conn.transaction():
        await conn.execute("LOCK TABLE blast_walk_rows IN EXCLUSIVE MODE")
        both = asyncio.gather(request(), request())
        await until_waiting_on(conn, {"relation", "advisory"})
    first, second = await both
    assert first == second and len(first) == 17
    assert await _kept(conn) == {"r": (17, True, 17)}


async def test_deleting_a_state_deletes_its_walks(conn) -> None:
    kept = await _keys(conn, "kept")
    gone = await _keys(conn, "gone")
    await blast_radius(conn, [kept["r"], gone["r"]], limits=WALK_LIMITS, first=1)
    state_id = await conn.fetchval("SELECT id FROM states WHERE name = 'gone'")
    await delete_state(conn, state_id, "gone", actor="test")
    left = await conn.fetch(
        "SELECT state_id FROM blast_walks UNION SELECT state_id FROM blast_walk_rows"
    )
    assert [r["state_id"] for r in left] == [await conn.fetchval("SELECT id FROM states")]


async def test_pruning_versions_deletes_their_walks(conn) -> None:
    v1 = await _keys(conn)
    v2 = await _keys(conn, body=chain_graph(serial=2, grown=True))
    await blast_radius(conn, [v1["r"], v2["r"]], limits=WALK_LIMITS, first=1)
    state_id = await conn.fetchval("SELECT id FROM states")
    await prune_state(conn, state_id, "g", keep_last=1, actor="test")
    assert [tuple(r) for r in await conn.fetch("SELECT serial, total FROM blast_walks")] == [
        (2, 18)
    ]
    assert await conn.fetchval("SELECT count(*) FROM blast_walk_rows") == 18
