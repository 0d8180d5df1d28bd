"""Reads of states and their versions, locks and outputs, batched by owner."""

import enum
from uuid import UUID

import asyncpg

from app.graph import shards
from app.paging import ALL, Keyset, Page, paged_sql, pages_by_owner, single_page


class StateKind(enum.Enum):
    TERRAFORM = "terraform"
    IAC = "iac"


# Every read of a state, a version or a resource selects these, under these
# names, so one converter in the API builds the objects from any of them.
STATE_COLUMNS = """s.id AS state_id, s.name AS state_name, s.kind AS state_kind,
    s.lineage AS state_lineage, s.created_at AS state_created_at"""
VERSION_COLUMNS = """v.id AS version_id, v.serial, v.lineage AS version_lineage,
    v.terraform_version, v.created_at AS version_created_at, v.created_by AS version_created_by,
    v.encrypted AS version_encrypted"""


def valid_at(alias: str, state_id: str = "$1", serial: str = "$2") -> str:
    """SQL: the rows of `alias` (a resources, outputs or edges row) that the version at
    `serial` of state `state_id` holds: each row is valid over [serial_from, serial_to)
    (migration 0005). Names state_id, as every statement on a graph table does."""
    return (
        f"{alias}.state_id = {state_id} AND {alias}.serial_from <= {serial}"
        f" AND ({alias}.serial_to IS NULL OR {alias}.serial_to > {serial})"
    )


# The current (highest serial) version `v` of each state `s`, to JOIN: by the serial its
# row keeps (states.current_serial, migration 0028), one probe of the versions'
# (state_id, serial) index a state. Citus runs it on each shard (`states` is a reference
# table there), which it does not for a LATERAL ... LIMIT 1 per state.
CURRENT_VERSION = "state_versions v ON v.state_id = s.id AND v.serial = s.current_serial"

STATE_KEY = Keyset(("state_name",), (str,))
VERSION_KEY = Keyset(("serial",), (int,))  # newest first


async def list_states(
    conn: asyncpg.Connection,
    *,
    first: int,
    after: tuple[str] | None = None,
    name_prefix: str | None = None,
    kind: StateKind | None = None,
    readable: list[str] | None = None,
) -> Page[asyncpg.Record]:
    """States by name (byte order); of those `readable` lets a caller see (app.access)."""
    sql = paged_sql(
        f"""SELECT {ALL} AS owner, s.id, s.name COLLATE "C" AS name FROM states s
            WHERE ($1::text IS NULL OR starts_with(s.name, $1))
              AND ($2::text IS NULL OR s.kind = $2) AND may_read(s.name, $5::text[])""",
        order="name",
        after="($3::text IS NULL OR name > $3)",
        limit="$4",
        select=STATE_COLUMNS,
        joins="LEFT JOIN states s ON s.id = p.id",
    )
    records = await conn.fetch(
        sql, name_prefix, kind and kind.value, after and after[0], first + 1, readable
    )
    return single_page(records, first, STATE_KEY)


async def state_by_name(conn: asyncpg.Connection, name: str) -> asyncpg.Record | None:
    return await conn.fetchrow(f"SELECT {STATE_COLUMNS} FROM states s WHERE s.name = $1", name)


async def states_by_ids(conn: asyncpg.Connection, ids: list[UUID]) -> dict[UUID, asyncpg.Record]:
    records = await conn.fetch(
        f"SELECT {STATE_COLUMNS} FROM states s WHERE s.id = ANY($1::uuid[])", ids
    )
    return {r["state_id"]: r for r in records}


async def versions_of(
    conn: asyncpg.Connection,
    state_ids: list[UUID],
    *,
    first: int,
    after: tuple[int] | None = None,
) -> dict[UUID, Page[asyncpg.Record]]:
    """Each state's versions, newest first."""
    sql = paged_sql(
        """SELECT v.state_id AS owner, v.id, v.serial FROM state_versions v
           WHERE v.state_id = ANY($1::uuid[])""",
        order="serial DESC",
        after="($2::bigint IS NULL OR serial < $2)",
        limit="$3",
        select=f"{VERSION_COLUMNS}, {STATE_COLUMNS}",
        joins="""LEFT JOIN state_versions v ON v.id = p.id
                 LEFT JOIN states s ON s.id = v.state_id""",
    )
    records = await conn.fetch(sql, state_ids, after and after[0], first + 1)
    return pages_by_owner(records, first, VERSION_KEY)


async def current_versions(
    conn: asyncpg.Connection, state_ids: list[UUID]
) -> dict[UUID, asyncpg.Record]:
    """The current (highest serial) version of each state that has one: one index probe
    a state (state_versions (state_id, serial DESC)), however many versions it has."""
    records = await conn.fetch(
        f"""SELECT {VERSION_COLUMNS}, {STATE_COLUMNS}
            FROM states s JOIN {CURRENT_VERSION}
            WHERE s.id = ANY($1::uuid[])""",
        state_ids,
    )
    return {r["state_id"]: r for r in records}


async def versions_at(
    conn: asyncpg.Connection, keys: list[tuple[UUID, int]]
) -> dict[tuple[UUID, int], asyncpg.Record]:
    """Versions by (state id, serial): on Citus a statement per state, naming it (on its
    shard alone: app/graph/shards.py)."""
    if not shards.sharded(conn):  # one statement for all
        records = await conn.fetch(
            f"""SELECT {VERSION_COLUMNS}, {STATE_COLUMNS}
                FROM unnest($1::uuid[], $2::bigint[]) AS k (state_id, serial)
                JOIN state_versions v ON v.state_id = k.state_id AND v.serial = k.serial
                JOIN states s ON s.id = v.state_id""",
            [state_id for state_id, _ in keys],
            [serial for _, serial in keys],
        )
        return {(r["state_id"], r["serial"]): r for r in records}
    serials: dict[UUID, list[int]] = {}
    for state_id, serial in keys:
        serials.setdefault(state_id, []).append(serial)
    found: dict[tuple[UUID, int], asyncpg.Record] = {}
    for state_id, of_state in serials.items():
        records = await conn.fetch(
            f"""SELECT {VERSION_COLUMNS}, {STATE_COLUMNS}
                FROM state_versions v JOIN states s ON s.id = v.state_id
                WHERE v.state_id = $1 AND v.serial = ANY($2::bigint[])""",
            state_id,
            of_state,
        )
        found.update({(r["state_id"], r["serial"]): r for r in records})
    return found


async def versions_by_ids(conn: asyncpg.Connection, ids: list[UUID]) -> dict[UUID, asyncpg.Record]:
    records = await conn.fetch(
        f"""SELECT {VERSION_COLUMNS}, {STATE_COLUMNS}
            FROM state_versions v JOIN states s ON s.id = v.state_id
            WHERE v.id = ANY($1::uuid[])""",
        ids,
    )
    return {r["version_id"]: r for r in records}


async def resource_counts(conn: asyncpg.Connection, version_ids: list[UUID]) -> dict[UUID, int]:
    records = await conn.fetch(
        "SELECT id, resource_count FROM state_versions WHERE id = ANY($1::uuid[])", version_ids
    )
    return {r["id"]: r["resource_count"] for r in records}


async def outputs_of(
    conn: asyncpg.Connection, version_ids: list[UUID]
) -> dict[UUID, list[asyncpg.Record]]:
    """Each version's outputs in document order; a sensitive output's value is withheld."""
    records = await conn.fetch(
        f"""SELECT v.id AS version_id, o.name, o.type, coalesce(o.sensitive, false) AS sensitive,
                   CASE WHEN o.sensitive THEN NULL ELSE o.value END AS value
            FROM state_versions v JOIN outputs o ON {valid_at("o", "v.state_id", "v.serial")}
            WHERE v.id = ANY($1::uuid[])
            ORDER BY v.id, o.position""",
        version_ids,
    )
    outputs: dict[UUID, list[asyncpg.Record]] = {}
    for record in records:
        outputs.setdefault(record["version_id"], []).append(record)
    return outputs


async def locks_of(conn: asyncpg.Connection, state_ids: list[UUID]) -> dict[UUID, asyncpg.Record]:
    records = await conn.fetch(
        """SELECT state_id, lock_id, info, holder, info->>'Who' AS who,
                  info->>'Operation' AS operation, created_at
           FROM state_locks WHERE state_id = ANY($1::uuid[])""",
        state_ids,
    )
    return {r["state_id"]: r for r in records}


async def totals(conn: asyncpg.Connection, readable: list[str] | None = None) -> asyncpg.Record:
    """How many states, resource instances in their current versions, and locks held; of
    the states `readable` lets a caller see (app.access)."""
    record = await conn.fetchrow(
        f"""SELECT (SELECT count(*) FROM states s WHERE may_read(s.name, $1::text[])) AS states,
                  (SELECT coalesce(sum(v.resource_count), 0) FROM states s
                   JOIN {CURRENT_VERSION}
                   WHERE may_read(s.name, $1::text[])) AS resources,
                  (SELECT count(*) FROM state_locks l JOIN states s ON s.id = l.state_id
                   WHERE may_read(s.name, $1::text[])) AS locked""",
        readable,
    )
    assert record is not None  # an aggregate always has its row
    return record
