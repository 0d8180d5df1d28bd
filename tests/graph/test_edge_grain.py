"""Edges stored at the grain they are declared: a dense fan-in state writes in rows in
proportion to its body and reads as its 6.25 million instance edges; its next versions
keep that; a database whose edges were stored instance to instance (before migration
0030) is converted and reads the same at every version."""

import json
import os
import time
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from app import db
from app.graph.edges import Direction, blast_radius
from app.graph.write import edges as write_edges
from app.graph.write import version as write_version_module
from app.graph.write.version import write_version
from tests.helpers.databases import connection_until
from tests.helpers.edges import history, instance_edges, old_edges, old_writer
from tests.helpers.fan_in import fan_in_state, read_as_fan_in, resource_key
from tests.helpers.states import WALK_LIMITS


async def _rows(conn: Any, name: str) -> int:
    return await conn.fetchval(
        """SELECT count(*) FROM resource_dependencies d JOIN states s ON s.id = d.state_id
           WHERE s.name = $1""",
        name,
    )


def _cpu(pid: int) -> float:
    """The CPU seconds process `pid` has used (PostgreSQL on this machine; else 0)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _load() -> str:
    try:
        with open("/proc/loadavg") as loadavg:
            return loadavg.read().split()[0]
    except OSError:
        return "?"


async def test_a_dense_fan_in_writes_its_body_not_the_product_of_its_counts(conn) -> None:
    body = fan_in_state()
    assert 600_000 < len(body) < 700_000
    backend = await conn.fetchval("SELECT pg_backend_pid()")
    started, cpu, server_cpu = time.perf_counter(), time.process_time(), _cpu(backend)
    await write_version(conn, "fan-in", body, actor="test")
    elapsed = time.perf_counter() - started
    cpu, server_cpu = time.process_time() - cpu, _cpu(backend) - server_cpu
    # an edge per reader, a member per source instance: not 2,500 x 2,500
    assert await _rows(conn, "fan-in") == 2_500 + 2_500
    print(
        f"\nfan-in 2,500 x 2,500 ({len(body) / 1e3:.0f} KB): written in {elapsed:.2f}s, "
        f"{cpu:.2f}s of CPU here and {server_cpu:.2f}s in PostgreSQL (load {_load()})"
    )
    # read as instance edges: every reader depends on every source instance, directly
    reader = await read_as_fan_in(conn, "fan-in")
    whole = (
        await blast_radius(conn, [reader], Direction.DEPENDENCIES, limits=WALK_LIMITS, first=1)
    )[reader]
    assert whole.total == 2_500


async def test_the_next_versions_of_a_fan_in_stay_at_its_grain(conn) -> None:
    await write_version(conn, "fan-next", fan_in_state(300, 200), actor="test")
    before = await _rows(conn, "fan-next")
    assert before == 200 + 300
    # one source instance changed: its member row closed and written again
    document = json.loads(fan_in_state(300, 200))
    document["serial"] = 2
    document["resources"][1]["instances"][5]["attributes"]["id"] = "changed"
    await write_version(conn, "fan-next", json.dumps(document).encode(), actor="test")
    assert await _rows(conn, "fan-next") == before + 1
    # a source instance added: the readers' edges stay, one member more
    document["serial"] = 3
    document["resources"][1]["instances"].append(
        {"index_key": 300, "schema_version": 0, "attributes": {"id": "new"}}
    )
    await write_version(conn, "fan-next", json.dumps(document).encode(), actor="test")
    assert await _rows(conn, "fan-next") == before + 2
    pairs = await instance_edges(conn, "fan-next")
    assert len(pairs) == 200 * 301
    assert len(await instance_edges(conn, "fan-next", 1)) == 200 * 300


@pytest.fixture
async def before_0030(admin_url: str) -> AsyncIterator[asyncpg.Connection]:
    async with connection_until(admin_url, 29) as conn:
        yield conn


async def test_edges_stored_instance_to_instance_are_converted_and_read_the_same(
    before_0030, monkeypatch
) -> None:
    conn = before_0030
    monkeypatch.setattr(write_version_module, "write_edges", old_writer)
    versions = history()
    for body in versions:
        await write_version(conn, "old", body, actor="test")
    fan_in = fan_in_state(40, 30)
    await write_version(conn, "old-fan", fan_in, actor="test")
    expected = {serial: await old_edges(conn, "old", serial) for serial in (1, 2)}
    assert len(expected[1]) > len(expected[2]) > 0
    assert await _rows(conn, "old-fan") == 40 * 30
    monkeypatch.undo()
    await db.migrate(conn)
    # every version reads as it did; the current ones at their grain
    assert {serial: await instance_edges(conn, "old", serial) for serial in (1, 2)} == expected
    assert await _rows(conn, "old-fan") == 30 + 40
    assert len(await instance_edges(conn, "old-fan")) == 40 * 30
    kinds = await conn.fetch(
        """SELECT d.kind, count(*) AS n FROM resource_dependencies d JOIN states s
           ON s.id = d.state_id WHERE s.name = 'old' AND d.serial_to IS NULL GROUP BY 1"""
    )
    assert {r["kind"] for r in kinds} == {"instance", "resource", "member"}
    # the next writes: as if written at the new grain from the start
    third = json.loads(versions[1])
    third["serial"] = 3
    third["resources"][0]["instances"].pop()  # net[2] removed
    await write_version(conn, "old", json.dumps(third).encode(), actor="test")
    await write_version(conn, "fresh", json.dumps(third).encode(), actor="test")
    assert await instance_edges(conn, "old") == await instance_edges(conn, "fresh")
    assert await _rows(conn, "old") > 0
    fresh_open = await conn.fetchval(
        """SELECT count(*) FROM resource_dependencies d JOIN states s ON s.id = d.state_id
           WHERE s.name = 'fresh'"""
    )
    old_open = await conn.fetchval(
        """SELECT count(*) FROM resource_dependencies d JOIN states s ON s.id = d.state_id
           WHERE s.name = 'old' AND d.serial_to IS NULL"""
    )
    assert old_open == fresh_open
    key = await resource_key(conn, "old", "terraform_data.net[0]")
    page = (await blast_radius(conn, [key], limits=WALK_LIMITS, first=20))[key]
    assert [(r["address"], r["depth"]) for r in page.rows] == [
        ('terraform_data.sub["a"]', 1),
        ('terraform_data.sub["b"]', 1),
        ("terraform_data.app[0]", 2),
        ("terraform_data.app[1]", 2),
        ("terraform_data.top", 3),
    ]
    assert write_edges.resource_id("terraform_data.net") == await conn.fetchval(
        "SELECT md5('resource terraform_data.net')::uuid"
    )
