"""Write a state version: one transaction of the version row (raw bytes kept verbatim),
its instance rows, edges and outputs (COPY), then what follows from them: links and
lineage, the event, policy checks, pruning."""

import asyncio
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from app.configuration.edges import configure_version
from app.graph import links, policies, sealing
from app.graph.events import append_event
from app.graph.raw import Body, save_raw, seal_md5
from app.graph.retention import prune_state
from app.graph.states import ensure_state
from app.graph.write.edges import write_edges
from app.graph.write.memo import Remembered, last_writes, remembered_resources
from app.graph.write.outputs import write_outputs
from app.graph.write.patch import InPlace, write_in_place
from app.graph.write.result import WrittenRows
from app.graph.write.rows import write_rows
from app.graph.write.rules import is_retry, locked_current, numbered
from app.process import gc_paused
from app.tfstate import EncryptedState, NormalizedState, ScannedState, scan_state
from app.tfstate.order import layout_of
from app.tfstate.remote import Server
from app.tfstate.skim import SkimmedState, skim_or_scan
from app.tfstate.stream import NotStreamable


@dataclass(frozen=True)
class Written:
    state_id: UUID
    version_id: UUID
    serial: int
    created: bool  # False when the very same body was already stored at that serial
    # the policy violations the write opened and resolved
    violations: tuple[policies.Finding, ...] = ()


async def write_version(
    conn: asyncpg.Connection,
    name: str,
    body: bytes | Body,
    *,
    actor: str,
    action: str = "write",
    kind: str = "terraform",
    state: NormalizedState | ScannedState | EncryptedState | None = None,
    detail: dict[str, Any] | None = None,
    keep_last: int | None = None,
    servers: Sequence[Server] = (),
    in_place: InPlace | None = None,
) -> Written:
    """Store `body` as the next version of state `name`, under the rules of its serial and
    lineage (app/graph/write/rules.py); with `keep_last`, then prune the state to its last
    `keep_last` versions (app/graph/retention.py) in the same transaction. `servers`: the
    base URLs of this server, whose states the `terraform_remote_state` data sources of
    the state link to (app/graph/links.py).

    A streamed state (app/tfstate/scan.py: scan_stream) is written as it is read; when
    the reader finds it must be read whole after all, the write is rolled back and done
    again from the whole document, which also says what is wrong with an invalid one.

    With `in_place` (app/graph/write/patch.py), while its base is the current version,
    the rows are written from that version's and the changed instances alone (and whole
    when those rows say they cannot be).
    """
    raw = body if isinstance(body, Body) else Body.of(body)
    state = state or skim_or_scan(raw.whole())
    write = functools.partial(
        _write_version,
        conn,
        name,
        raw,
        actor=actor,
        action=action,
        kind=kind,
        detail=detail,
        keep_last=keep_last,
        servers=servers,
        in_place=in_place,
    )
    try:
        return await write(state)
    except NotStreamable:
        return await write(await asyncio.to_thread(scan_state, raw.whole()))


async def _write_version(
    conn: asyncpg.Connection,
    name: str,
    raw: Body,
    state: NormalizedState | ScannedState | EncryptedState,
    *,
    actor: str,
    action: str,
    kind: str,
    detail: dict[str, Any] | None,
    keep_last: int | None,
    servers: Sequence[Server],
    in_place: InPlace | None,
) -> Written:
    md5 = raw.md5
    async with conn.transaction():
        state_id = await ensure_state(conn, name, kind)
        current = await locked_current(conn, state_id)
        version = numbered(state, current, md5)
        if current is not None and is_retry(name, version, md5, current):
            return Written(state_id, current.id, version.serial, created=False)
        # Building rows allocates per instance; with the parsed state alive, each GC pass
        # would walk millions of objects that can form no cycle.
        with gc_paused():
            patched = None
            if in_place is not None and current is not None and current.id == in_place.base:
                patched = await _write_in_place(conn, state_id, version, raw, actor, in_place)
            if patched is None:
                version_id = await _insert_version(conn, state_id, version, md5, actor)
                remembered = last_writes.resources(state_id, current.id) if current else None
                rows, outputs_changed = await _write_graph(
                    conn, state_id, version_id, version, servers, remembered
                )
                count = await _complete_version(conn, version_id, version, raw, rows)
            else:
                version_id, rows, count = patched
                outputs_changed = False
        # a state with a configuration: the new version's edges with their reasons
        await configure_version(conn, state_id, version.serial)
        if outputs_changed:
            await links.note_sensitive_outputs(conn, state_id)
            await links.record_stale(conn, state_id, version.serial, actor=actor)
            await sealing.reseal_consumers(conn, name)
        await conn.execute(
            "UPDATE states SET lineage = nullif($2, ''), current_serial = $3 WHERE id = $1",
            state_id,
            version.lineage,
            version.serial,
        )
        await append_event(
            conn,
            state_name=name,
            state_id=state_id,
            action=action,
            actor=actor,
            serial=version.serial,
            detail={
                "resources": count,
                "bytes": raw.size,
                **rows.summary(),
                **({"encrypted": True} if version.encrypted else {}),
                **(detail or {}),
            },
        )
        found = await policies.check_write(
            conn,
            state_id,
            name,
            version.serial,
            inserted=rows.inserted,
            closed=list(rows.closed),
            actor=actor,
        )
        # Inside the write's transaction: under the lock it already holds, and no reader
        # ever sees more than keep_last versions (INFRAGRAPH_PRUNE_KEEP_LAST).
        await prune_state(conn, state_id, name, keep_last, actor=actor)
    if patched is None and isinstance(version, SkimmedState):
        resources = await asyncio.to_thread(
            remembered_resources, version.digests, rows.refs, rows.row_ids
        )
        last_writes.remember(state_id, version_id, resources)
    else:
        last_writes.forget(state_id)
    return Written(state_id, version_id, version.serial, created=True, violations=tuple(found))


async def _write_graph(
    conn: asyncpg.Connection,
    state_id: UUID,
    version_id: UUID,
    state: NormalizedState | ScannedState,
    servers: Sequence[Server],
    remembered: Mapping[bytes, Remembered] | None,
) -> tuple[WrittenRows, bool]:
    """The version's instance rows, edges, outputs, links and lineage; what the write did
    to the rows, and whether any output was added, changed or removed. `remembered`: of
    the current version, by its write (app/graph/write/memo.py)."""
    rows = await write_rows(conn, state_id, version_id, state, servers, remembered)
    await write_edges(conn, version_id, rows)
    outputs_changed = await write_outputs(conn, state_id, version_id, state)
    await links.write_links(conn, rows, servers)
    await links.write_lineage(conn, rows, outputs_changed)
    return rows, outputs_changed


class _NotInPlace(Exception):
    """The current version's rows say the change is not in place: rolled back."""


async def _write_in_place(
    conn: asyncpg.Connection,
    state_id: UUID,
    version: NormalizedState | ScannedState,
    raw: Body,
    actor: str,
    patch: InPlace,
) -> tuple[UUID, WrittenRows, int] | None:
    """The version written in place (app/graph/write/patch.py), in a savepoint: its id,
    rows and instance count; None, nothing written, when it cannot be."""
    try:
        async with conn.transaction():
            version_id = await _insert_version(conn, state_id, version, raw.md5, actor)
            rows = await write_in_place(conn, state_id, version_id, patch)
            if rows is None:
                raise _NotInPlace
            await write_edges(conn, version_id, rows)  # the closed rows', between successors
            if await write_outputs(conn, state_id, version_id, version):
                raise _NotInPlace  # the outputs' lineage is worked out whole
            await links.write_links(conn, rows, ())
            await links.write_lineage(conn, rows, False)
            base = await conn.fetchrow(
                "SELECT layout, resource_count FROM state_versions WHERE state_id = $1 AND id = $2",
                state_id,
                patch.base,
            )
            assert base is not None  # the current version, under the state's row lock
            await _complete_version(
                conn, version_id, version, raw, rows, (base["layout"], base["resource_count"])
            )
    except _NotInPlace:
        return None
    return version_id, rows, base["resource_count"]


async def _insert_version(
    conn: asyncpg.Connection,
    state_id: UUID,
    state: NormalizedState | ScannedState,
    md5: bytes,
    actor: str,
) -> UUID:
    """The version row, before its rows (they refer to it); its raw bytes, layout and
    count are known after them (_complete_version)."""
    version_id: UUID = await conn.fetchval(
        """INSERT INTO state_versions
               (state_id, serial, lineage, raw_chunks, raw_md5, created_by, encrypted)
           VALUES ($1, $2, $3, '{}', $4, $5, $6) RETURNING id""",
        state_id,
        state.serial,
        state.lineage,
        seal_md5(md5, state_id),
        actor,
        state.encrypted,
    )
    return version_id


async def _complete_version(
    conn: asyncpg.Connection,
    version_id: UUID,
    state: NormalizedState | ScannedState,
    raw: Body,
    rows: WrittenRows,
    kept: tuple[Any, int] | None = None,
) -> int:
    """The version row's raw bytes, layout and count (`kept`: the ones of the version it
    changes in place), and the document's fields: a streamed document's are complete
    once its resources were read. Its layout: the instances' order when not Terraform's
    (app/tfstate/order.py). Gives the count."""
    layout, count = kept if kept is not None else (layout_of(rows.refs), len(rows.refs))
    await conn.execute(
        """UPDATE state_versions
           SET raw_chunks = $2, terraform_version = $3, extra = $4, omitted = $5,
               resource_count = $6, layout = $7
           WHERE state_id = $8 AND id = $1""",
        version_id,
        await save_raw(conn, rows.state_id, raw),
        state.terraform_version,
        state.extra,
        state.omitted,
        count,
        layout,
        rows.state_id,
    )
    return count
