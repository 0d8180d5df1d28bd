"""Retention: old versions pruned by the rule, the rest export exactly as before.

Histories share rows between versions (migration 0005), so a pruned version's rows
are deleted only when no remaining version holds them, and a row written by a pruned
version but still held is handed to the oldest remaining version of its range.
"""

import json
import random
import uuid
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette

from app.config import Settings
from app.errors import BadInput
from app.graph.retention import glob_matches, prune
from app.jsonutil import dumps
from app.server import create_app
from tests.helpers.corpus import corpus_files
from tests.helpers.histories import (
    assert_rows_consistent,
    evolve,
    exports_as_posted,
    histories,
    write_all,
)
from tests.helpers.states import shared_history


async def serials_of(conn: Any, name: str) -> list[int]:
    return [
        r["serial"]
        for r in await conn.fetch(
            """SELECT v.serial FROM state_versions v JOIN states s ON s.id = v.state_id
               WHERE s.name = $1 ORDER BY v.serial""",
            name,
        )
    ]


async def row_counts(conn: Any) -> tuple[int, int, int]:
    return tuple(
        await conn.fetchrow(
            """SELECT (SELECT count(*) FROM resources),
                      (SELECT count(*) FROM resource_dependencies),
                      (SELECT count(*) FROM outputs)"""
        )
    )


async def test_keep_last_prunes_older_versions_and_the_rest_export_as_posted(conn) -> None:
    posted = await write_all(conn, "net", shared_history())
    await exports_as_posted(conn, "net", posted)
    before = await row_counts(conn)

    pruned = await prune(conn, state_glob="net", keep_last=2, keep_days=None, actor="ops")

    assert [p.serials for p in pruned] == [[1, 2, 3, 4]]
    assert await serials_of(conn, "net") == [5, 6]
    await exports_as_posted(conn, "net", {5: posted[5], 6: posted[6]})
    await assert_rows_consistent(conn)
    after = await row_counts(conn)
    removed = (pruned[0].resources, pruned[0].edges, pruned[0].outputs)
    assert tuple(b - a for b, a in zip(before, after, strict=True)) == removed
    # web["x"] of serial 1 and its edge to the subnets, the eip, its edge to web and
    # web's two members went; the output of serial 1 stays
    assert removed == (2, 4, 0)
    # the vpc was written at serial 1 and is held by both remaining versions: it stays,
    # and names the version that wrote it
    vpc = await conn.fetchrow(
        "SELECT serial_from, serial_to FROM resources WHERE address = $1", "aws_vpc.main"
    )
    assert (vpc["serial_from"], vpc["serial_to"]) == (1, None)
    event = await conn.fetchrow("SELECT actor, detail FROM events WHERE action = 'prune'")
    assert event["actor"] == "ops"
    assert event["detail"]["serials"] == [1, 2, 3, 4]
    # each pruned version's body was one small chunk of its own
    assert event["detail"]["removed"] == {"resources": 2, "edges": 4, "outputs": 0, "chunks": 4}

    # again: nothing left to prune, no event
    assert await prune(conn, state_glob="net", keep_last=2, keep_days=None, actor="ops") == []
    assert await conn.fetchval("SELECT count(*) FROM events WHERE action = 'prune'") == 1


async def test_the_current_version_is_never_pruned(conn) -> None:
    posted = await write_all(conn, "one", shared_history())
    await conn.execute("UPDATE state_versions SET created_at = now() - interval '30 days'")
    pruned = await prune(conn, state_glob="one", keep_last=1, keep_days=0, actor="ops")
    assert pruned[0].serials == [1, 2, 3, 4, 5]
    await exports_as_posted(conn, "one", {6: posted[6]})
    await assert_rows_consistent(conn)
    # only the current version's rows are left
    assert await conn.fetchval("SELECT count(*) FROM resources WHERE serial_to IS NOT NULL") == 0
    with pytest.raises(BadInput):
        await prune(conn, state_glob="one", keep_last=0, keep_days=None, actor="ops")


async def test_keep_days_keeps_recent_versions_beyond_keep_last(conn) -> None:
    posted = await write_all(conn, "aged", shared_history())
    # serials 1-3 written 10 days ago, 4 two days ago, 5 and 6 just now
    await conn.execute(
        """UPDATE state_versions SET created_at = now() - CASE
               WHEN serial <= 3 THEN interval '10 days' WHEN serial = 4 THEN interval '2 days'
               ELSE interval '0' END"""
    )
    pruned = await prune(conn, state_glob="aged", keep_last=1, keep_days=3, actor="ops")
    assert pruned[0].serials == [1, 2, 3]
    await exports_as_posted(conn, "aged", {s: posted[s] for s in (4, 5, 6)})
    await assert_rows_consistent(conn)
    # among the last 4: kept whatever its age
    await conn.execute("UPDATE state_versions SET created_at = now() - interval '10 days'")
    assert await prune(conn, state_glob="aged", keep_last=4, keep_days=3, actor="ops") == []
    pruned = await prune(conn, state_glob="aged", keep_last=2, keep_days=0.5, actor="ops")
    assert pruned[0].serials == [4]
    await exports_as_posted(conn, "aged", {s: posted[s] for s in (5, 6)})


async def test_glob_selects_states(conn) -> None:
    bodies = shared_history()[:3]
    for name in ("team/a", "team/b/c", "other/a", "team"):
        await write_all(conn, name, bodies)
    await write_all(conn, "team/short", bodies[:1])
    pruned = await prune(conn, state_glob="team/*", keep_last=1, keep_days=None, actor="ops")
    assert [(p.state, p.serials) for p in pruned] == [("team/a", [1, 2]), ("team/b/c", [1, 2])]
    assert await serials_of(conn, "other/a") == [1, 2, 3]
    assert await serials_of(conn, "team") == [1, 2, 3]
    # one dialect with tokens and policies (app/globs.py): brackets are plain characters
    assert glob_matches(["a[1]", "a1", "ab", "a[ab]"], "a[ab]") == ["a[ab]"]
    assert glob_matches(["a[1]", "a1"], "a[1]") == ["a[1]"]
    assert glob_matches(["A/x", "a/x"], "a/*") == ["a/x"]


async def test_corpus_histories_prune_and_export_as_posted(conn) -> None:
    rng = random.Random(11)
    for index, path in enumerate(corpus_files()):
        name = f"corpus/{index}"
        document = json.loads(path.read_bytes())
        bodies = [path.read_bytes()]
        for step in range(5):
            document = evolve(document, step, rng)
            bodies.append(dumps(document))
        posted = await write_all(conn, name, bodies)
        pruned = await prune(conn, state_glob=name, keep_last=3, keep_days=None, actor="t")
        assert [(p.state, p.serials) for p in pruned] == [(name, sorted(posted)[:3])]
        await exports_as_posted(conn, name, {s: posted[s] for s in sorted(posted)[3:]})
    await assert_rows_consistent(conn)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(history=histories(), keep_last=st.integers(1, 5))
async def test_random_histories_prune_and_export_as_posted(pool, history, keep_last) -> None:
    name = f"random/{uuid.uuid4()}"
    async with pool.acquire() as conn:
        posted = await write_all(conn, name, [dumps(d) for d in history])
        await prune(conn, state_glob=name, keep_last=keep_last, keep_days=None, actor="t")
        kept = sorted(posted)[-keep_last:]
        assert await serials_of(conn, name) == kept
        await exports_as_posted(conn, name, {s: posted[s] for s in kept})
        await assert_rows_consistent(conn)


def test_setting_from_the_environment(monkeypatch) -> None:
    monkeypatch.delenv("INFRAGRAPH_PRUNE_KEEP_LAST", raising=False)
    assert Settings.from_env().prune_keep_last is None
    monkeypatch.setenv("INFRAGRAPH_PRUNE_KEEP_LAST", "3")
    assert Settings.from_env().prune_keep_last == 3
    monkeypatch.setenv("INFRAGRAPH_PRUNE_KEEP_LAST", "0")
    with pytest.raises(ValueError, match="at least 1"):
        Settings.from_env()


@pytest.fixture
async def pruning_app(database_url: str) -> Any:
    application: Starlette = create_app(Settings(prune_keep_last=2), database_url=database_url)
    async with application.router.lifespan_context(application):
        yield application


async def test_the_setting_prunes_after_each_write(conn, pruning_app) -> None:
    bodies = shared_history()
    posted = {json.loads(body)["serial"]: body for body in bodies}
    transport = httpx.ASGITransport(app=pruning_app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://test", headers={"Content-Type": "application/json"}
    ) as client:
        for body in bodies:
            response = await client.post("/states/kept/two", content=body)
            assert response.status_code == 200, response.text
    assert await serials_of(conn, "kept/two") == [5, 6]
    await exports_as_posted(conn, "kept/two", {5: posted[5], 6: posted[6]})
    await assert_rows_consistent(conn)
    pruned = await conn.fetch("SELECT serial, detail FROM events WHERE action = 'prune'")
    # from the third write on, each prunes the version two before it
    assert sorted(e["detail"]["serials"][0] for e in pruned) == [1, 2, 3, 4]
