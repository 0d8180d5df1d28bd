"""Upgrade in place: a database that v0 wrote (migrations 0001-0004: a full set of rows
per version) migrated to v1 reads back every version as it was posted, and takes new
writes that share rows.

The v0 writes below are v0's writer (`git show e8c6293:app/graph/store.py`,
`_insert_version` and `_copy_rows`): the same statements on the same rows.
"""

import hashlib
import json
import random
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from app import db
from app.graph.diff import diff_versions
from app.graph.edges import Direction, neighbours
from app.graph.ids import time_ordered_ids
from app.graph.resources import version_resources
from app.graph.retention import prune
from app.graph.write.version import write_version
from app.jsonutil import dumps
from app.tfstate import INSTANCE_COLUMNS, OUTPUT_COLUMNS, parse_state
from tests.helpers.corpus import corpus_files
from tests.helpers.databases import throwaway_database
from tests.helpers.histories import assert_rows_consistent, evolve, exports_as_posted
from tests.helpers.states import resource, shared_history, state

pytestmark = pytest.mark.slow  # starts servers of its own

V0_LAST_MIGRATION = 4


async def write_v0(conn: asyncpg.Connection, name: str, body: bytes) -> None:
    """Store `body` as the next version of `name` the way v0 did (no checks: the
    histories here are valid)."""
    state = parse_state(body)
    async with conn.transaction():
        state_id = await conn.fetchval(
            """INSERT INTO states (name) VALUES ($1)
               ON CONFLICT (name) DO UPDATE SET name = excluded.name RETURNING id""",
            name,
        )
        version_id = await conn.fetchval(
            """INSERT INTO state_versions
                   (state_id, serial, lineage, terraform_version, raw_state, raw_md5,
                    extra, omitted, created_by)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id""",
            state_id,
            state.serial,
            state.lineage,
            state.terraform_version,
            body,
            hashlib.md5(body).digest(),
            state.extra,
            state.omitted,
            "v0",
        )
        ids = time_ordered_ids(len(state.instances))
        if state.instances:
            await conn.copy_records_to_table(
                "resources",
                columns=("id", "state_version_id", *INSTANCE_COLUMNS),
                records=[
                    (rid, version_id, *row) for rid, row in zip(ids, state.instances, strict=True)
                ],
            )
        if state.edges:
            await conn.copy_records_to_table(
                "resource_dependencies",
                columns=("state_version_id", "from_resource_id", "to_resource_id"),
                records=[(version_id, ids[a], ids[b]) for a, b in state.edges],
            )
        if state.outputs:
            await conn.copy_records_to_table(
                "outputs",
                columns=("state_version_id", *OUTPUT_COLUMNS),
                records=[(version_id, *row) for row in state.outputs],
            )
        await conn.execute("UPDATE states SET lineage = $2 WHERE id = $1", state_id, state.lineage)


def unsorted_history() -> list[bytes]:
    """Resources and instances out of Terraform's order, then reordered again."""
    resources = [
        resource("aws_subnet", "b", keys=[2, 0, 1], depends_on=["aws_vpc.main"]),
        resource("aws_vpc", "main", module="module.net"),
        resource("aws_vpc", "main"),
        resource("aws_iam_role", "r", keys=["z", "a"], attributes={"arn": "arn:1"}),
    ]
    versions = [state(resources, serial=3, lineage="u")]
    resources[3]["instances"].reverse()
    versions.append(state(resources, serial=4, lineage="u"))
    versions.append(state(resources[::-1], serial=7, lineage="u", outputs={"n": {"value": 1}}))
    return versions


def histories() -> dict[str, list[bytes]]:
    """Per state, its versions: hand-made ones, an empty first version, and each corpus
    file through six kinds of change (added, removed, changed, outputs, moved, reordered)."""
    found = {
        "net": shared_history(),
        "unsorted": unsorted_history(),
        "empty-first": [state([], serial=0, lineage="e"), *shared_history()[:2]],
    }
    rng = random.Random(5)
    for index, path in enumerate(corpus_files()):
        document = json.loads(path.read_bytes())
        bodies = [path.read_bytes()]
        for step in range(6):
            document = evolve(document, step, rng)
            bodies.append(dumps(document))
        found[f"corpus/{index}/{path.stem}"] = bodies
    return found


@pytest.fixture
async def v0_conn(admin_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection to a database at v0's schema (migrations up to 0004)."""
    async with throwaway_database(admin_url, until=V0_LAST_MIGRATION) as url:
        conn = await asyncpg.connect(url)
        await db.init_connection(conn)
        try:
            yield conn
        finally:
            await conn.close()


def posted_of(bodies: list[bytes]) -> dict[int, bytes]:
    return {json.loads(body)["serial"]: body for body in bodies}


async def version_ids(conn: asyncpg.Connection, name: str) -> dict[int, Any]:
    records = await conn.fetch(
        """SELECT v.serial, v.id FROM state_versions v JOIN states s ON s.id = v.state_id
           WHERE s.name = $1 ORDER BY v.serial""",
        name,
    )
    return {r["serial"]: r["id"] for r in records}


async def assert_graph_reads(conn: asyncpg.Connection, name: str, bodies: list[bytes]) -> None:
    """Each version's resources (as GraphQL lists them), their dependencies, and the
    diff against the version before, as the posted documents say."""
    ids = await version_ids(conn, name)
    pages = await version_resources(conn, list(ids.values()), first=100_000)
    previous: dict[str, Any] | None = None
    for body in bodies:
        parsed = parse_state(body)
        version_id = ids[parsed.serial]
        page = pages.get(version_id)
        rows = {r["address"]: r for r in (page.rows if page else [])}
        expected = {row.address: row.attributes for row in parsed.instances}
        assert {a: r["attributes"] for a, r in rows.items()} == expected, name
        keys = [(r["id"], version_id) for r in rows.values()]
        hops = await neighbours(conn, keys, Direction.DEPENDENCIES, first=100_000) if keys else {}
        edges = {
            (address, target["address"])
            for address, row in rows.items()
            if (row["id"], version_id) in hops  # a resource with no dependencies has no page
            for target in hops[(row["id"], version_id)].rows
        }
        addresses = [row.address for row in parsed.instances]
        assert edges == {(addresses[a], addresses[b]) for a, b in parsed.edges}, name
        if previous is not None:
            diff = (await diff_versions(conn, [(version_id, previous["serial"])]))[
                (version_id, previous["serial"])
            ]
            old = previous["attributes"]
            assert sorted(diff.added) == sorted(expected.keys() - old.keys()), name
            assert sorted(diff.removed) == sorted(old.keys() - expected.keys()), name
            assert sorted(c.address for c in diff.changed) == sorted(
                a for a in expected.keys() & old.keys() if expected[a] != old[a]
            ), name
        previous = {"serial": parsed.serial, "attributes": expected}


async def test_v0_database_upgrades_in_place(v0_conn: asyncpg.Connection) -> None:
    conn = v0_conn
    written = histories()
    for name, bodies in written.items():
        for body in bodies:
            await write_v0(conn, name, body)
    assert await db.migrate(conn) == [
        p.name for p in db.migration_files() if int(p.name[:4]) > V0_LAST_MIGRATION
    ]

    for name, bodies in written.items():
        await exports_as_posted(conn, name, posted_of(bodies))
        await assert_graph_reads(conn, name, bodies)
    await assert_rows_consistent(conn)

    # New writes on top: the first rewrites the current rows (they have no content hash
    # yet), the next shares every row that did not change.
    rng = random.Random(9)
    for name, bodies in written.items():
        document = json.loads(bodies[-1])
        for step in range(6, 9):  # past the steps of histories(): new names
            document = evolve(document, step, rng)
            bodies.append(dumps(document))
            await write_version(conn, name, bodies[-1], actor="test")
        document["serial"] += 1
        bodies.append(dumps(document))
        again = await write_version(conn, name, bodies[-1], actor="test")
        for table in ("resources", "resource_dependencies", "outputs"):
            fresh = await conn.fetchval(
                f"SELECT count(*) FROM {table} WHERE state_id = $1 AND serial_from = $2",
                again.state_id,
                again.serial,
            )
            assert fresh == 0, (name, table)
        await exports_as_posted(conn, name, posted_of(bodies))
        await assert_graph_reads(conn, name, bodies[-5:])
    await assert_rows_consistent(conn)

    # and retention across the upgrade: v0's versions pruned, the rest as posted
    await prune(conn, state_glob="*", keep_last=3, keep_days=None, actor="test")
    for name, bodies in written.items():
        await exports_as_posted(conn, name, posted_of(bodies[-3:]))
    await assert_rows_consistent(conn)
