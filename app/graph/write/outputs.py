"""A new version's outputs: the changed ones written, the rest shared with the current
version; a sensitive value kept apart (app/graph/sensitive.py: Stored)."""

from typing import Any
from uuid import UUID

import asyncpg

from app import crypto
from app.graph.digests import write_value_digests
from app.graph.sensitive import stored_output
from app.tfstate import OUTPUT_COLUMNS, NormalizedState, ScannedState


async def write_outputs(
    conn: asyncpg.Connection,
    state_id: UUID,
    version_id: UUID,
    state: NormalizedState | ScannedState,
) -> bool:
    """Outputs follow versions like instances do (by name, their position included).
    True when any was added, changed or removed."""
    current = {
        r["name"]: r["content_hash"]
        for r in await conn.fetch(
            "SELECT name, content_hash FROM outputs WHERE state_id = $1 AND serial_to IS NULL",
            state_id,
        )
    }
    ring = crypto.keyring()
    new = []
    added: list[tuple[str, Any]] = []  # (name, value) of new rows
    for row in state.outputs:
        stored = stored_output(row)
        digest = stored.digest(ring)
        if current.get(row.name) == digest:
            del current[row.name]
        else:
            added.append((row.name, row.value))
            new.append(
                (
                    state_id,
                    version_id,
                    state.serial,
                    digest,
                    stored.sealed(ring, state_id),
                    *stored.row,
                )
            )
    replaced = list(current)  # removed, or changed (a new row follows)
    if replaced:
        await conn.execute(
            """UPDATE outputs SET serial_to = $2
               WHERE state_id = $1 AND serial_to IS NULL AND name = ANY($3::text[])""",
            state_id,
            state.serial,
            replaced,
        )
    if new:
        await conn.copy_records_to_table(
            "outputs",
            columns=(
                "state_id",
                "state_version_id",
                "serial_from",
                "content_hash",
                "secrets",
                *OUTPUT_COLUMNS,
            ),
            records=new,
        )
    if new:
        # what a consumer read is compared with (app/graph/links.py), for every new row
        await write_value_digests(conn, state_id, state.serial, added)
    return bool(new or replaced)
