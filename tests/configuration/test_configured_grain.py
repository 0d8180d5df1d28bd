"""A configured version's copy of its edges at the grain they are declared (migration
0031): a configuration referencing a dense fan-in stores a row a reader, not the product
of its counts, and every read of a configured version (neighbours, reasoned edges, blast
radius both ways, the radius picture) gives what the copy instance to instance gave; a
database whose copies were made instance to instance is converted and reads the same."""

import json
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from app import db
from app.configuration import edges as configured
from app.configuration.edges import reasoned_edges
from app.configuration.parse import parse_configuration
from app.configuration.store import PUSH, record_configuration
from app.graph.edges import Direction, blast_radius, neighbours
from app.graph.resources import find_resource
from app.graph.write.version import write_version
from tests.conftest import throwaway_database
from tests.graph.states import WALK_LIMITS
from tests.helpers.configured import OLD_CONFIGURE, check_reads, instance_grain_copy
from tests.helpers.edges import history
from tests.helpers.fan_in import READER, SOURCE, fan_in_state
from tests.plans.configurations import config_resource, configuration, module, refs


def _data(name: str, *references: str, depends_on: list[str] | None = None) -> dict[str, Any]:
    expressions = {"input": refs(*(f"terraform_data.{r}.id" for r in references))}
    return config_resource(
        f"terraform_data.{name}", expressions if references else None, depends_on=depends_on
    )


def fan_in_configuration() -> dict[str, Any]:
    """The readers reference the counted source."""
    return configuration(module([_data("reader", "source"), _data("source")]))


def history_configuration() -> dict[str, Any]:
    """References for tests/helpers/edges.py history(): some of the reduction's edges,
    some it drops (top -> net), depends_on (app -> sub), a cycle's one way."""
    return configuration(
        module(
            [
                _data("base"),
                _data("net", "base"),
                _data("sub", "net"),
                _data("app", "net", depends_on=["terraform_data.sub"]),
                _data("one"),
                _data("cyc", "loop"),
                _data("loop"),
                _data("top", "net"),
            ]
        )
    )


async def _configure(conn: Any, name: str, section: dict[str, Any]) -> None:
    await record_configuration(
        conn, name, parse_configuration(section), origin=PUSH, submitter="test"
    )


async def _rows(conn: Any, name: str, serial: int | None = None) -> int:
    return await conn.fetchval(
        """SELECT count(*) FROM configured_edges c JOIN states s ON s.id = c.state_id
           WHERE s.name = $1 AND ($2::bigint IS NULL OR c.serial = $2)""",
        name,
        serial,
    )


async def _key(conn: Any, name: str, address: str) -> tuple[Any, Any]:
    found = await find_resource(conn, name, address, None)
    return (found["id"], found["version_id"])


async def test_a_configured_dense_fan_in_stores_a_row_a_reader(conn) -> None:
    await write_version(conn, "cfg-fan", fan_in_state(), actor="test")
    await _configure(conn, "cfg-fan", fan_in_configuration())
    # a `resource` row a reader (its reference covers every source instance), not 6.25M
    assert await _rows(conn, "cfg-fan", 1) == 2_500
    kinds = await conn.fetch("SELECT DISTINCT kind, reason, direct FROM configured_edges")
    assert [tuple(r) for r in kinds] == [("resource", "implicit", True)]
    # read as the 2,500 x 2,500 implicit edges
    source = await _key(conn, "cfg-fan", f"{SOURCE}[7]")
    page = (await blast_radius(conn, [source], limits=WALK_LIMITS, first=3))[source]
    assert page.total == 2_500
    assert [(r["address"], r["depth"]) for r in page.rows] == [
        (f'{READER}["k0000"]', 1),
        (f'{READER}["k0001"]', 1),
        (f'{READER}["k0002"]', 1),
    ]
    reader = await _key(conn, "cfg-fan", f'{READER}["k1234"]')
    found = await neighbours(conn, [reader], Direction.DEPENDENCIES, first=5_000, direct=True)
    assert len(found[reader].rows) == 2_500
    edges = (await reasoned_edges(conn, [reader], referenced_by=False, limit=5_000))[reader]
    assert len(edges) == 2_500
    assert {(r["reason"], tuple(r["attributes"]), r["direct"]) for r in edges} == {
        ("implicit", ("input",), True)
    }
    back = (await reasoned_edges(conn, [source], referenced_by=True, limit=5_000))[source]
    assert len(back) == 2_500 and {r["reason"] for r in back} == {"implicit"}
    # the next version, configured at its write: its own rows, at the same grain
    document = json.loads(fan_in_state())
    document["serial"] = 2
    document["resources"][1]["instances"][5]["attributes"]["id"] = "changed"
    await write_version(conn, "cfg-fan", json.dumps(document).encode(), actor="test")
    assert await _rows(conn, "cfg-fan", 2) == 2_500


async def test_configured_reads_are_those_of_the_copy_instance_to_instance(conn) -> None:
    versions = history()
    await write_version(conn, "cfg-history", versions[0], actor="test")
    await _configure(conn, "cfg-history", history_configuration())
    await write_version(conn, "cfg-history", versions[1], actor="test")
    for serial in (1, 2):
        copy = await instance_grain_copy(conn, "cfg-history", serial)
        reasons = {reason for reason, _, _ in copy.values()}
        assert reasons == {"implicit", "explicit", "declared"}, serial
        assert await check_reads(conn, "cfg-history", serial) == len(copy)
        # fewer rows than pairs: the edges to resources of several instances are one row
        assert await _rows(conn, "cfg-history", serial) < len(copy)
    await write_version(conn, "cfg-small", fan_in_state(12, 9), actor="test")
    await _configure(conn, "cfg-small", fan_in_configuration())
    assert await check_reads(conn, "cfg-small", 1) == 12 * 9
    assert await _rows(conn, "cfg-small") == 9


@pytest.fixture
async def before_0031(admin_url: str) -> AsyncIterator[asyncpg.Connection]:
    async with throwaway_database(admin_url, until=30) as url:
        pool = await db.create_pool(url, min_size=1, max_size=1)
        try:
            async with pool.acquire() as conn:
                yield conn
        finally:
            await pool.close()


async def write_old_copies(conn: Any, monkeypatch: Any) -> dict[str, int]:
    """States configured with their copies made instance to instance (before 0031): the
    rows each has."""
    monkeypatch.setattr(configured, "_CONFIGURE", OLD_CONFIGURE)
    versions = history()
    await write_version(conn, "old-history", versions[0], actor="test")
    await _configure(conn, "old-history", history_configuration())
    await write_version(conn, "old-history", versions[1], actor="test")
    await write_version(conn, "old-fan", fan_in_state(40, 30), actor="test")
    await _configure(conn, "old-fan", fan_in_configuration())
    monkeypatch.undo()
    return {name: await _rows(conn, name) for name in ("old-history", "old-fan")}


async def check_converted(conn: Any, before: dict[str, int]) -> None:
    """The copies converted: the fan-in a row a reader, every read as before."""
    assert before["old-fan"] == 40 * 30
    assert await _rows(conn, "old-fan") == 30
    assert await _rows(conn, "old-history") < before["old-history"]
    for serial in (1, 2):
        await check_reads(conn, "old-history", serial)
    await check_reads(conn, "old-fan", 1)


async def test_copies_made_instance_to_instance_are_converted(before_0031, monkeypatch) -> None:
    conn = before_0031
    before = await write_old_copies(conn, monkeypatch)
    assert "0031_configured_grain.sql" in await db.migrate(conn)
    await check_converted(conn, before)
