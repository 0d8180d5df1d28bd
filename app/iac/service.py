"""IaC entry points for the API: plan, apply, release, export, state (scopes by
slug).

Plan reads one consistent snapshot (REPEATABLE READ, read only). Apply takes a
per-scope advisory lock (every system of the scope: one table, one owner), replans
inside its transaction and refuses with STALE_PLAN when the hash differs from the
reviewed one; then live changes, records, state rows, server-owned settings and the
graph version commit together or not at all.
"""

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from app.catalog import tables
from app.catalog.records import list_records_by_key
from app.catalog.scopes import scope_by_slug
from app.catalog.snapshot import load_scope_snapshot
from app.config import Settings
from app.errors import AppError, BadInput, Conflict, NotFound, StalePlan
from app.graph import policies, policy_previews
from app.graph.events import append_event
from app.graph.states import ensure_state
from app.graph.write.rules import current_version
from app.graph.write.version import write_version
from app.iac.apply import apply_plan
from app.iac.document import parse_document
from app.iac.export import export_scope
from app.iac.graph import graph_state, planned_instances, state_name
from app.iac.model import Document, DocumentError
from app.iac.plan import Plan, PlanError, make_plan, record_tables
from app.iac.state import StateRow, public_view, replace_rows, rows_of
from app.iac.state import secret_key as state_secret_key


@dataclass(frozen=True)
class Applied:
    state_name: str
    serial: int
    summary: dict[str, int]
    plan: Plan


def _parse(document: bytes, max_bytes: int) -> Document:
    try:
        return parse_document(document, max_bytes=max_bytes)
    except DocumentError as exc:
        raise _rejected(exc) from None


def _rejected(exc: DocumentError) -> AppError:
    error = Conflict if isinstance(exc, PlanError) and exc.claimed else BadInput
    return error(str(exc), {"errors": exc.as_dicts()})


async def _plan(
    conn: asyncpg.Connection, scope_id: Any, doc: Document, key: bytes
) -> tuple[Plan, list[StateRow]]:
    # the secrets themselves: a plan compares them (as keyed hashes) and shows them redacted
    snapshot = await load_scope_snapshot(conn, scope_id, reveal=True)
    rows = await rows_of(conn, scope_id, None)  # every system's: claims matter
    wanted = record_tables(doc, rows, snapshot)
    found = await list_records_by_key(conn, wanted) if wanted else {}
    records = {
        tid: [{"id": str(r["id"]), "values": r["values"]} for r in rs] for tid, rs in found.items()
    }
    try:
        return make_plan(doc, rows, snapshot, records, secret_key=key), rows
    except PlanError as exc:
        raise _rejected(exc) from None


async def plan(
    conn: asyncpg.Connection,
    scope: str,
    document: bytes,
    *,
    max_bytes: int = Settings.max_document_bytes,
    secret_key: str | None = None,
) -> Plan:
    """The plan, with the policy violations applying it would open (those of enforced
    policies will refuse the apply). `secret_key`: INFRAGRAPH_SECRET_KEY (None: the
    database's)."""
    doc = _parse(document, max_bytes)
    key = await state_secret_key(conn, secret_key)
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        scope_row = await scope_by_slug(conn, scope)
        result, rows = await _plan(conn, scope_row["id"], doc, key)
        if not result.changes_anything:  # its apply writes no graph version
            return result
        planned = planned_instances(result, rows)
        found = await policy_previews.preview(conn, state_name(scope, doc.system), planned)
        return dataclasses.replace(result, violations=tuple(found))


async def apply(
    conn: asyncpg.Connection,
    scope: str,
    document: bytes,
    plan_hash: str,
    *,
    actor: str,
    max_bytes: int = Settings.max_document_bytes,
    secret_key: str | None = None,
    keep_last: int | None = None,
) -> Applied:
    doc = _parse(document, max_bytes)
    key = await state_secret_key(conn, secret_key)
    async with conn.transaction():
        scope_row = await scope_by_slug(conn, scope)
        scope_id = scope_row["id"]
        await _lock_scope(conn, scope_id)
        fresh, rows = await _plan(conn, scope_id, doc, key)
        if fresh.hash != plan_hash:
            raise StalePlan(
                "the plan is stale: the document, the state or the live resources changed "
                "since it was made (plan again and review)"
            )
        after = await apply_plan(conn, scope_id, fresh, rows)
        detail = {"scope": scope, "system": doc.system, "summary": fresh.summary}
        name, serial, found = await _record(
            conn,
            scope,
            doc.system,
            after,
            actor,
            "apply",
            detail,
            fresh.changes_anything,
            keep_last=keep_last,
        )
        policies.refuse_enforced(found)  # rolls the whole apply back
        return Applied(name, serial, fresh.summary, fresh)


async def _lock_scope(conn: asyncpg.Connection, scope_id: Any) -> None:
    """One lock per scope, not per system: claims are per live resource across the
    systems of a scope, so two systems adopting or creating one table queue here and the
    second replans against the first's claims (stale or refused, never both)."""
    await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", f"iac:{scope_id}")


async def _record(
    conn: asyncpg.Connection,
    scope: str,
    system: str,
    rows: list[StateRow],
    actor: str,
    action: str,
    detail: dict[str, Any],
    changed: bool,
    *,
    keep_last: int | None = None,
) -> tuple[str, int, tuple[policies.Finding, ...]]:
    """The system's state rows after `action` as the next version of its graph state
    (an event on the current version when nothing changed; then the state pruned to its
    last `keep_last` versions); (state name, serial, the policy violations it opened and
    resolved)."""
    name = state_name(scope, system)
    state_id = await ensure_state(conn, name, "iac")
    current = await current_version(conn, state_id)
    if current is not None and not changed:
        await append_event(
            conn,
            state_name=name,
            state_id=state_id,
            action=action,
            actor=actor,
            serial=current["serial"],
            detail={**detail, "changed": False},
        )
        return name, current["serial"], ()
    serial = current["serial"] + 1 if current else 1
    lineage = current["lineage"] if current else str(uuid.uuid4())
    body, state = graph_state(rows, serial=serial, lineage=lineage, system=system)
    written = await write_version(
        conn,
        name,
        body,
        actor=actor,
        action=action,
        kind="iac",
        state=state,
        detail=detail,
        keep_last=keep_last,
    )
    return name, written.serial, written.violations


@dataclass(frozen=True)
class Released:
    state_name: str
    serial: int
    refs: list[str]  # what was released: the given refs, and the sub-resources of tables


async def release(
    conn: asyncpg.Connection, scope: str, system: str, refs: list[str], *, actor: str
) -> Released:
    """Hand-over, first half: `system` lets go of the resources under `refs` (a table's
    sub-resources go with it). Their state rows are deleted and a released table loses its
    `system:` tag and settings.iac; the live resources stay as they are, unmanaged, for
    another system to adopt. Recorded as a version of the system's graph state."""
    async with conn.transaction():
        scope_row = await scope_by_slug(conn, scope)
        scope_id = scope_row["id"]
        await _lock_scope(conn, scope_id)
        rows = await rows_of(conn, scope_id, system)
        by_ref = {row.ref: row for row in rows}
        unknown = [ref for ref in refs if ref not in by_ref]
        if unknown or not refs:
            raise NotFound(
                f"system {system!r} manages no {', '.join(unknown) or 'ref: name one'} "
                f"in scope {scope!r}",
                {"refs": unknown},
            )
        tables_released = {
            by_ref[r].resource_id for r in refs if by_ref[r].resource_type == "table"
        }
        gone = [
            row
            for row in rows
            if row.ref in refs
            or (
                row.table_id in tables_released and row.ref.startswith(tuple(f"{r}." for r in refs))
            )
        ]
        await replace_rows(conn, scope_id, system, {row.key for row in gone}, ())
        await tables.release_managed(conn, system, sorted(tables_released))
        released = sorted(row.ref for row in gone)
        kept = [row for row in rows if row.ref not in released]
        detail = {"scope": scope, "system": system, "released": released}
        name, serial, _ = await _record(conn, scope, system, kept, actor, "release", detail, True)
        return Released(name, serial, released)


async def export(conn: asyncpg.Connection, scope: str, system: str) -> bytes:
    scope_row = await scope_by_slug(conn, scope)
    return await export_scope(conn, scope_row["id"], system)


async def state(conn: asyncpg.Connection, scope: str, system: str | None) -> list[dict[str, Any]]:
    scope_row = await scope_by_slug(conn, scope)
    return [public_view(row) for row in await rows_of(conn, scope_row["id"], system)]
