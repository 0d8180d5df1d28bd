"""A new version's instance rows: the current version's unchanged rows shared with it,
the new ones inserted (COPY) a batch at a time, and the rows they replace closed."""

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

import asyncpg

from app.graph import sealing
from app.graph.write.memo import Remembered
from app.graph.write.result import WrittenRows
from app.graph.write.stream import RowStream
from app.jsonutil import JSON_NULL
from app.tfstate import INSTANCE_COLUMNS, NormalizedState, ScannedState
from app.tfstate.remote import Server

RESOURCE_COPY_COLUMNS = (
    "id",
    "state_id",
    "state_version_id",
    "serial_from",
    "content_hash",
    "raw_hash",
    "secrets",
    *INSTANCE_COLUMNS,
)


async def write_rows(
    conn: asyncpg.Connection,
    state_id: UUID,
    version_id: UUID,
    state: NormalizedState | ScannedState,
    servers: Sequence[Server],
    remembered: Mapping[bytes, Remembered] | None = None,
) -> WrittenRows:
    """Share the current version's unchanged rows with the new version; insert what was
    added or changed, a batch at a time, then close what was removed or replaced
    (serial_to = the new serial). `remembered`: what the write of the current version
    remembered of it (app/graph/write/memo.py)."""
    serial = state.serial
    # as four arrays: one row to decode, not one per instance
    columns = await conn.fetchrow(
        """SELECT coalesce(array_agg(address), '{}') AS addresses,
                  coalesce(array_agg(id), '{}') AS ids,
                  coalesce(array_agg(content_hash), '{}') AS content_hashes,
                  coalesce(array_agg(raw_hash), '{}') AS raw_hashes
           FROM resources WHERE state_id = $1 AND serial_to IS NULL""",
        state_id,
    )
    assert columns is not None
    current = dict(
        zip(
            columns["addresses"],
            zip(columns["ids"], columns["content_hashes"], columns["raw_hashes"], strict=True),
            strict=True,
        )
    )
    idle = asyncio.Lock()  # held while the connection copies: the batches' look-ups wait
    linked = sealing.LinkedSensitive(conn, servers, asyncio.get_running_loop(), idle)
    rows = RowStream(current, state, (state_id, version_id, serial), linked.paths, remembered)
    await _copy_batches(conn, rows, idle)
    closed = {**rows.replaced, **{row_id: address for address, (row_id, _, _) in current.items()}}
    # the dependencies each closed row had, by address (JSON null and absent: None)
    closed_names = (
        {
            closed[r["id"]]: (r["dependencies_raw"], r["depends_on_raw"])
            for r in await conn.fetch(
                """UPDATE resources SET serial_to = $2
                   WHERE state_id = $1 AND id = ANY($3::uuid[])
                   RETURNING id, dependencies_raw, depends_on_raw""",
                state_id,
                serial,
                list(closed),
            )
        }
        if closed
        else {}
    )
    if rows.rehashed:
        await conn.execute(
            """UPDATE resources r SET raw_hash = h.raw_hash
               FROM unnest($2::uuid[], $3::bytea[]) AS h (id, raw_hash)
               WHERE r.state_id = $1 AND r.id = h.id""",
            state_id,
            [row_id for row_id, _ in rows.rehashed],
            [raw for _, raw in rows.rehashed],
        )
    return WrittenRows(
        state_id=state_id,
        serial=serial,
        state=state,
        refs=rows.refs,
        row_ids=rows.row_ids,
        new=rows.new,
        changed=rows.changed,
        closed=closed,
        remote=rows.remote,
        holds_output_value=rows.holds_output_value,
        successors=_successors(rows, closed, closed_names),
    )


async def _copy_batches(conn: asyncpg.Connection, rows: RowStream, idle: asyncio.Lock) -> None:
    """COPY each batch's new rows while the worker thread builds the next batch: the
    database stores one batch as Python makes the next."""
    building = asyncio.ensure_future(asyncio.to_thread(rows.next_batch))
    try:
        while (records := await building) is not None:
            building = asyncio.ensure_future(asyncio.to_thread(rows.next_batch))
            if records:
                async with idle:
                    await conn.copy_records_to_table(
                        "resources", columns=RESOURCE_COPY_COLUMNS, records=records
                    )
    finally:
        if not building.done():  # a COPY failed: the batch being built ends first
            await asyncio.wait([building])
        if not building.cancelled():
            building.exception()  # retrieved: the COPY's error is the one raised


def _successors(
    rows: RowStream, closed: dict[UUID, str], closed_names: dict[str, tuple[Any, Any]]
) -> dict[UUID, UUID] | None:
    """Each closed row's successor, when every new row replaces the closed row at its
    address and names what it named (JSON null as absent): the edges are then the same,
    between the successors. None otherwise."""
    if len(rows.new) != len(closed_names):  # an instance added or removed
        return None
    successors: dict[UUID, UUID] = {}
    row_at = {address: row_id for row_id, address in closed.items()}
    for position in rows.new:
        ref = rows.refs[position]
        names = (ref.dependencies_raw, ref.depends_on_raw)
        if closed_names.get(ref.address) != tuple(None if n is JSON_NULL else n for n in names):
            return None
        successors[row_at[ref.address]] = rows.row_ids[position]
    return successors
