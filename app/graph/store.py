"""Write a state version into the graph and read it back.

A write is one transaction: the version row (raw bytes kept verbatim), then
its resources, edges and outputs bulk-loaded with COPY. Export renders the
document from those rows, never from raw_state.
"""

import hashlib
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from app.errors import Conflict, NotFound
from app.graph.events import append_event
from app.graph.ids import time_ordered_ids
from app.graph.raw import save_raw
from app.jsonutil import JSON_NULL, gc_paused, loads
from app.tfstate import (
    INSTANCE_COLUMNS,
    OUTPUT_COLUMNS,
    InstanceRow,
    NormalizedState,
    OutputRow,
    parse_state,
    render_state,
)

_JSONB_INSTANCE = {
    "index_key",
    "attributes",
    "attributes_flat",
    "sensitive_attributes",
    "dependencies_raw",
    "depends_on_raw",
    "identity",
}
_JSONB_OUTPUT = {"value", "type"}


@dataclass(frozen=True)
class Written:
    state_id: UUID
    version_id: UUID
    serial: int
    created: bool  # False when the very same body was already stored at that serial


async def state_id_of(conn: asyncpg.Connection, name: str) -> UUID | None:
    return await conn.fetchval("SELECT id FROM states WHERE name = $1", name)


async def ensure_state(conn: asyncpg.Connection, name: str, kind: str = "terraform") -> UUID:
    """The state's id, creating its row when it has none (a first lock or write)."""
    state_id = await conn.fetchval(
        """WITH made AS (INSERT INTO states (name, kind) VALUES ($1, $2)
                         ON CONFLICT (name) DO NOTHING RETURNING id)
           SELECT id FROM made UNION ALL SELECT id FROM states WHERE name = $1 LIMIT 1""",
        name,
        kind,
    )
    # None only when another transaction made the row after this statement's snapshot
    return state_id or await conn.fetchval("SELECT id FROM states WHERE name = $1", name)


async def current_version(conn: asyncpg.Connection, state_id: UUID) -> asyncpg.Record | None:
    return await conn.fetchrow(
        """SELECT v.id, v.serial, v.lineage, v.raw_md5,
                  NOT EXISTS (SELECT 1 FROM resources r WHERE r.state_version_id = v.id)
                  AND NOT EXISTS (SELECT 1 FROM outputs o WHERE o.state_version_id = v.id) AS empty
           FROM state_versions v WHERE v.state_id = $1
           ORDER BY v.serial DESC LIMIT 1""",
        state_id,
    )


async def write_version(
    conn: asyncpg.Connection,
    name: str,
    body: bytes,
    *,
    actor: str,
    action: str = "write",
    kind: str = "terraform",
    state: NormalizedState | None = None,
    detail: dict[str, Any] | None = None,
) -> Written:
    """Store `body` as the next version of state `name`.

    Rules Terraform relies on: serial never goes backwards; the same serial
    with a different body is refused, the very same body again is accepted
    and changes nothing (a retry after a lost response); lineage is fixed once
    set, unless the current version is empty.
    """
    state = state or parse_state(body)
    md5 = hashlib.md5(body).digest()
    async with conn.transaction():
        state_id = await ensure_state(conn, name, kind)
        # Serializes writers of one state: the checks below cannot race.
        await conn.execute("SELECT 1 FROM states WHERE id = $1 FOR UPDATE", state_id)
        current = await current_version(conn, state_id)
        if current is not None:
            if state.serial == current["serial"] and md5 == current["raw_md5"]:
                return Written(state_id, current["id"], state.serial, created=False)
            if state.lineage != current["lineage"] and not current["empty"]:
                raise Conflict(
                    f"lineage mismatch: state {name!r} has lineage {current['lineage']}, "
                    f"the new version has {state.lineage}",
                    {"current_lineage": current["lineage"], "lineage": state.lineage},
                )
            if state.serial <= current["serial"]:
                raise Conflict(
                    f"serial {state.serial} is not newer than the current serial "
                    f"{current['serial']} of state {name!r}",
                    {"current_serial": current["serial"], "serial": state.serial},
                )
        version_id = await _insert_version(conn, state_id, state, body, md5, actor)
        await conn.execute("UPDATE states SET lineage = $2 WHERE id = $1", state_id, state.lineage)
        await append_event(
            conn,
            state_name=name,
            state_id=state_id,
            action=action,
            actor=actor,
            serial=state.serial,
            detail={"resources": len(state.instances), "bytes": len(body), **(detail or {})},
        )
    return Written(state_id, version_id, state.serial, created=True)


async def _insert_version(
    conn: asyncpg.Connection,
    state_id: UUID,
    state: NormalizedState,
    body: bytes,
    md5: bytes,
    actor: str,
) -> UUID:
    version_id = await conn.fetchval(
        """INSERT INTO state_versions
               (state_id, serial, lineage, terraform_version, raw_chunks, raw_md5,
                extra, omitted, created_by)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id""",
        state_id,
        state.serial,
        state.lineage,
        state.terraform_version,
        await save_raw(conn, state_id, body),
        md5,
        state.extra,
        state.omitted,
        actor,
    )
    # Building rows allocates per instance; with the parsed state alive, each GC pass
    # would walk millions of objects that can form no cycle.
    with gc_paused():
        await _copy_rows(conn, version_id, state)
    return version_id


async def _copy_rows(conn: asyncpg.Connection, version_id: UUID, state: NormalizedState) -> None:
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


def _select_list(columns: tuple[str, ...], jsonb: set[str]) -> str:
    # JSONB read as text so a JSON null ('null') stays apart from an absent key (SQL NULL)
    return ", ".join(f"{c}::text AS {c}" if c in jsonb else c for c in columns)


def _from_text(record: asyncpg.Record, columns: tuple[str, ...], jsonb: set[str]) -> list[Any]:
    values = []
    for column in columns:
        value = record[column]
        if column in jsonb and value is not None:
            value = JSON_NULL if value == "null" else loads(value)
        values.append(value)
    return values


async def find_version(
    conn: asyncpg.Connection, name: str, serial: int | None = None
) -> asyncpg.Record:
    """The version row of state `name` at `serial` (default: current); NotFound otherwise."""
    record = await conn.fetchrow(
        """SELECT v.id, v.state_id, v.serial, v.lineage, v.terraform_version, v.extra, v.omitted
           FROM states s JOIN state_versions v ON v.state_id = s.id
           WHERE s.name = $1 AND ($2::bigint IS NULL OR v.serial = $2)
           ORDER BY v.serial DESC LIMIT 1""",
        name,
        serial,
    )
    if record is None:
        what = f"state {name!r}" + (f" at serial {serial}" if serial is not None else "")
        raise NotFound(f"no {what}")
    return record


async def render_version(conn: asyncpg.Connection, version: asyncpg.Record) -> dict[str, Any]:
    """The state document of `version`, rendered from its normalized rows."""
    instance_rows = await conn.fetch(
        f"""SELECT {_select_list(INSTANCE_COLUMNS, _JSONB_INSTANCE)} FROM resources
            WHERE state_version_id = $1 ORDER BY resource_index, instance_index""",
        version["id"],
    )
    output_rows = await conn.fetch(
        f"""SELECT {_select_list(OUTPUT_COLUMNS, _JSONB_OUTPUT)} FROM outputs
            WHERE state_version_id = $1 ORDER BY position""",
        version["id"],
    )
    return render_state(
        serial=version["serial"],
        lineage=version["lineage"],
        terraform_version=version["terraform_version"],
        instances=[
            InstanceRow(*_from_text(r, INSTANCE_COLUMNS, _JSONB_INSTANCE)) for r in instance_rows
        ],
        outputs=[OutputRow(*_from_text(r, OUTPUT_COLUMNS, _JSONB_OUTPUT)) for r in output_rows],
        extra=version["extra"],
        omitted=version["omitted"],
    )


async def export_state(
    conn: asyncpg.Connection, name: str, *, serial: int | None = None, actor: str
) -> dict[str, Any]:
    """Render state `name` (current or at `serial`) from its rows and record the export."""
    version = await find_version(conn, name, serial)
    document = await render_version(conn, version)
    await append_event(
        conn,
        state_name=name,
        state_id=version["state_id"],
        action="export",
        actor=actor,
        serial=version["serial"],
    )
    return document


async def delete_state(conn: asyncpg.Connection, state_id: UUID, name: str, *, actor: str) -> int:
    """Delete a state and its history (its rows cascade); its events stay, by name.
    Returns how many versions went."""
    versions = await conn.fetchval(
        # the count sees the snapshot from before the DELETE in the same statement
        """WITH edges AS (DELETE FROM resource_dependencies d USING state_versions v
                          WHERE d.state_version_id = v.id AND v.state_id = $1),
                gone AS (DELETE FROM states WHERE id = $1)
           SELECT count(*) FROM state_versions WHERE state_id = $1""",
        state_id,
    )
    await append_event(
        conn, state_name=name, action="delete", actor=actor, detail={"versions": versions}
    )
    return versions
