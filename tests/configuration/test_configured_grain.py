"""A configured version's copy of its edges at the grain they are declared (migration
0031): a configuration referencing a dense fan-in stores a row a reader, not the product
of its counts, and every read of a configured version (neighbours, reasoned edges, blast
radius both ways, the radius picture) gives what the copy instance to instance gave; a
database whose copies were made instance to instance is converted and reads the same."""

import json
from collections.abc import AsyncIterator

import asyncpg
import pytest

from app import db
from app.configuration.edges import reasoned_edges
from app.graph.write.version import write_version
from tests.helpers.configured import (
    check_converted,
    check_reads,
    configure,
    configured_rows,
    fan_in_configuration,
    history_configuration,
    instance_grain_copy,
    write_old_copies,
)
from tests.helpers.databases import connection_until
from tests.helpers.edges import history
from tests.helpers.fan_in import SOURCE, fan_in_state, read_as_fan_in, resource_key


async def test_a_configured_dense_fan_in_stores_a_row_a_reader(conn) -> None:
    await write_version(conn, "cfg-fan", fan_in_state(), actor="test")
    await configure(conn, "cfg-fan", fan_in_configuration())
    # a `resource` row a reader (its reference covers every source instance), not 6.25M
    assert await configured_rows(conn, "cfg-fan", 1) == 2_500
    kinds = await conn.fetch("SELECT DISTINCT kind, reason, direct FROM configured_edges")
    assert [tuple(r) for r in kinds] == [("resource", "implicit", True)]
    # read as the 2,500 x 2,500 implicit edges
    reader = await read_as_fan_in(conn, "cfg-fan")
    edges = (await reasoned_edges(conn, [reader], referenced_by=False, limit=5_000))[reader]
    assert len(edges) == 2_500
    assert {(r["reason"], tuple(r["attributes"]), r["direct"]) for r in edges} == {
        ("implicit", ("input",), True)
    }
    source = await resource_key(conn, "cfg-fan", f"{SOURCE}[7]")
    back = (await reasoned_edges(conn, [source], referenced_by=True, limit=5_000))[source]
    assert len(back) == 2_500 and {r["reason"] for r in back} == {"implicit"}
    # the next version, configured at its write: its own rows, at the same grain
    document = json.loads(fan_in_state())
    document["serial"] = 2
    document["resources"][1]["instances"][5]["attributes"]["id"] = "changed"
    await write_version(conn, "cfg-fan", json.dumps(document).encode(), actor="test")
    assert await configured_rows(conn, "cfg-fan", 2) == 2_500


async def test_configured_reads_are_those_of_the_copy_instance_to_instance(conn) -> None:
    versions = history()
    await write_version(conn, "cfg-history", versions[0], actor="test")
    await configure(conn, "cfg-history", history_configuration())
    await write_version(conn, "cfg-history", versions[1], actor="test")
    for serial in (1, 2):
        copy = await instance_grain_copy(conn, "cfg-history", serial)
        reasons = {reason for reason, _, _ in copy.values()}
        assert reasons == {"implicit", "explicit", "declared"}, serial
        assert await check_reads(conn, "cfg-history", serial) == len(copy)
        # fewer rows than pairs: the edges to resources of several instances are one row
        assert await configured_rows(conn, "cfg-history", serial) < len(copy)
    await write_version(conn, "cfg-small", fan_in_state(12, 9), actor="test")
    await configure(conn, "cfg-small", fan_in_configuration())
    assert await check_reads(conn, "cfg-small", 1) == 12 * 9
    assert await configured_rows(conn, "cfg-small") == 9


@pytest.fixture
async def before_0031(admin_url: str) -> AsyncIterator[asyncpg.Connection]:
    async with connection_until(admin_url, 30) as conn:
        yield conn


async def test_copies_made_instance_to_instance_are_converted(before_0031, monkeypatch) -> None:
    conn = before_0031
    before = await write_old_copies(conn, monkeypatch)
    assert "0031_configured_grain.sql" in await db.migrate(conn)
    await check_converted(conn, before)
