"""Configuration versions stored (migration 0029): recorded from a plan or a push, kept
only when their content differs from the state's latest, listed, and their module calls
found across states."""

import uuid
from uuid import UUID

import asyncpg

from app.configuration.edges import configure_version
from app.configuration.parse import Configuration
from app.errors import NotFound
from app.graph import shards
from app.graph.edges import forget_walks

PLAN, PUSH = "plan", "push"  # where a configuration version came from

_COLUMNS = """c.id, c.state_id, s.name AS state_name, c.number, c.hash, c.origin,
    c.submitter, c.base_serial, c.terraform_version, c.created_at,
    jsonb_build_object('variables', c.document->'variables',
                       'providers', c.document->'providers') AS document"""


async def record_configuration(
    conn: asyncpg.Connection,
    state_name: str,
    configuration: Configuration,
    *,
    origin: str,
    submitter: str,
) -> tuple[asyncpg.Record, bool]:
    """The state's configuration version for `configuration`: a new one (True), or its
    latest when that has the same content (False). A new one becomes the state's, and
    the state's current version follows its references from then on."""
    async with conn.transaction():
        state = await conn.fetchrow("SELECT id FROM states WHERE name = $1 FOR UPDATE", state_name)
        if state is None:
            raise NotFound(f"no state {state_name!r}")
        state_id: UUID = state["id"]
        latest = await conn.fetchrow(
            """SELECT c.id, c.hash, c.number FROM configurations c
               WHERE c.state_id = $1 ORDER BY c.number DESC LIMIT 1""",
            state_id,
        )
        if latest is not None and latest["hash"] == configuration.hash:
            return await _get(conn, latest["id"]), False
        serial = await conn.fetchval(
            "SELECT max(serial) FROM state_versions WHERE state_id = $1", state_id
        )
        config_id = uuid.uuid4()
        await conn.execute(
            """INSERT INTO configurations (id, state_id, number, hash, origin, submitter,
                   base_serial, terraform_version, document)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)""",
            config_id,
            state_id,
            (latest["number"] if latest else 0) + 1,
            configuration.hash,
            origin,
            submitter,
            serial,
            configuration.terraform_version,
            configuration.document(),
        )
        modules = configuration.modules
        await conn.execute(
            """INSERT INTO configuration_modules (configuration_id, state_id, key, name, parent,
                   source, version_constraint, expansion)
               SELECT $1, $2, * FROM unnest($3::text[], $4::text[], $5::text[], $6::text[],
                                            $7::text[], $8::text[])""",
            config_id,
            state_id,
            [m.key for m in modules],
            [m.name for m in modules],
            [m.parent for m in modules],
            [m.source for m in modules],
            [m.version_constraint for m in modules],
            [m.expansion for m in modules],
        )
        references = configuration.references
        await conn.execute(
            """INSERT INTO configuration_references (configuration_id, state_id, source, target,
                   reason, attributes)
               SELECT $1, $2, x.source, x.target, x.reason,
                      ARRAY(SELECT jsonb_array_elements_text($6::jsonb -> (x.ord - 1)::int))
               FROM unnest($3::text[], $4::text[], $5::text[]) WITH ORDINALITY
                   AS x (source, target, reason, ord)""",
            config_id,
            state_id,
            [r.source for r in references],
            [r.target for r in references],
            [r.reason for r in references],
            [list(r.attributes) for r in references],
        )
        await conn.execute(
            """INSERT INTO state_configurations (state_id, configuration_id) VALUES ($1, $2)
               ON CONFLICT (state_id) DO UPDATE SET configuration_id = EXCLUDED.configuration_id""",
            state_id,
            config_id,
        )
        if serial is not None:
            await configure_version(conn, state_id, serial, replace=True)
            # its kept walks followed the edges before
            await forget_walks(conn, state_id, [serial])
        return await _get(conn, config_id), True


async def _get(conn: asyncpg.Connection, config_id: UUID) -> asyncpg.Record:
    row = await conn.fetchrow(
        f"""SELECT {_COLUMNS} FROM configurations c JOIN states s ON s.id = c.state_id
            WHERE c.id = $1""",
        config_id,
    )
    assert row is not None
    return row


async def configuration_versions(
    conn: asyncpg.Connection, state_ids: list[UUID], *, limit: int
) -> dict[UUID, list[asyncpg.Record]]:
    """Each state's configuration versions, newest first, at most `limit` each (a
    statement per state, naming it: on its shard alone on Citus)."""
    found: dict[UUID, list[asyncpg.Record]] = {i: [] for i in state_ids}
    if not shards.sharded(conn):  # one statement for all
        records = await conn.fetch(
            f"""SELECT {_COLUMNS} FROM unnest($1::uuid[]) AS k (id)
                JOIN states s ON s.id = k.id
                CROSS JOIN LATERAL (SELECT * FROM configurations c
                                    WHERE c.state_id = k.id ORDER BY c.number DESC LIMIT $2) c""",
            state_ids,
            limit,
        )
        for r in records:
            found[r["state_id"]].append(r)
        return found
    for state_id in found:
        found[state_id] = await conn.fetch(
            f"""SELECT {_COLUMNS} FROM configurations c JOIN states s ON s.id = c.state_id
                WHERE c.state_id = $1 ORDER BY c.number DESC LIMIT $2""",
            state_id,
            limit,
        )
    return found


# Module calls `found` (with their state's name) and, with `under`, what their states'
# current versions hold under each: its module instances (module paths) and how many
# resource instances. One pass over each state's current resources in modules, grouped
# by their module's key, whatever the number of calls.
_WITH_UNDER = """
    {found},
    under AS (
        SELECT r.state_id, config_address(r.module_path) AS key,
               array_agg(DISTINCT r.module_path ORDER BY r.module_path) AS instances,
               count(*) AS resources
        FROM (SELECT DISTINCT state_id FROM found) f
        JOIN resources r ON r.state_id = f.state_id AND r.serial_to IS NULL
        WHERE r.module_path IS NOT NULL{pinned}
        GROUP BY 1, 2)
    SELECT m.*, coalesce(u.instances, '{{}}') AS instances,
           coalesce(u.resources, 0)::int AS resources
    FROM found m LEFT JOIN under u ON u.state_id = m.state_id AND u.key = m.key
    ORDER BY m.state_name COLLATE "C", m.key COLLATE "C"
"""
# The same without what is under them (not asked for).
_WITHOUT_UNDER = """
    {found}
    SELECT m.*, '{{}}'::text[] AS instances, 0 AS resources FROM found m
    ORDER BY m.state_name COLLATE "C", m.key COLLATE "C"
"""
_FOUND_COLUMNS = """m.configuration_id, m.state_id, s.name AS state_name, m.key, m.name,
    m.parent, m.source, m.version_constraint, m.expansion"""


async def state_modules(
    conn: asyncpg.Connection, state_ids: list[UUID], *, under: bool = True
) -> dict[UUID, list[asyncpg.Record]]:
    """Each state's module calls in its latest configuration, by key; with `under`, the
    instances and resource count of each in the state's current version. A statement
    per state on Citus, naming it (on its shard alone), else one for all."""
    grouped: dict[UUID, list[asyncpg.Record]] = {i: [] for i in state_ids}
    if not shards.sharded(conn):
        found = f"""WITH found AS (
            SELECT {_FOUND_COLUMNS}
            FROM unnest($1::uuid[]) AS k (id)
            JOIN state_configurations sc ON sc.state_id = k.id
            JOIN states s ON s.id = k.id
            JOIN configuration_modules m ON m.configuration_id = sc.configuration_id)"""
        sql = (_WITH_UNDER if under else _WITHOUT_UNDER).format(found=found, pinned="")
        for r in await conn.fetch(sql, state_ids):
            grouped[r["state_id"]].append(r)
        return grouped
    found = f"""WITH found AS (
        SELECT {_FOUND_COLUMNS}
        FROM state_configurations sc
        JOIN states s ON s.id = sc.state_id
        JOIN configuration_modules m ON m.configuration_id = sc.configuration_id
                                    AND m.state_id = $1
        WHERE sc.state_id = $1)"""
    sql = (_WITH_UNDER if under else _WITHOUT_UNDER).format(
        found=found, pinned=" AND r.state_id = $1"
    )
    for state_id in dict.fromkeys(state_ids):
        grouped[state_id].extend(await conn.fetch(sql, state_id))
    return grouped


async def find_modules(
    conn: asyncpg.Connection,
    *,
    source: str | None,
    state: str | None = None,
    version_constraint: str | None = None,
    readable: list[str] | None = None,
    limit: int,
    under: bool = False,
) -> list[asyncpg.Record]:
    """The module calls of every state's latest configuration (that `readable` may
    read), by state name then key: of `source`, in `state`, at `version_constraint`."""
    found = f"""WITH found AS (
        SELECT {_FOUND_COLUMNS}
        FROM configuration_modules m
        JOIN state_configurations sc ON sc.configuration_id = m.configuration_id
                                     AND sc.state_id = m.state_id
        JOIN states s ON s.id = sc.state_id
        WHERE ($1::text IS NULL OR m.source = $1)
          AND ($2::text IS NULL OR s.name = $2)
          AND ($3::text IS NULL OR m.version_constraint = $3)
          AND may_read(s.name, $4::text[])
        ORDER BY s.name COLLATE "C", m.key COLLATE "C"
        LIMIT $5)"""
    sql = (_WITH_UNDER if under else _WITHOUT_UNDER).format(found=found, pinned="")
    return await conn.fetch(sql, source, state, version_constraint, readable, limit)
