"""IaC entry points for the API and CLI: plan, apply, export, state (scopes by slug).

Plan reads one consistent snapshot (REPEATABLE READ, read only). Apply takes a
per-(scope, system) advisory lock, replans inside its transaction and refuses with
STALE_PLAN when the hash differs from the reviewed one; then live changes, records,
state rows, server-owned settings and the graph version commit together or not at all.
"""

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from app.catalog.records import list_records_by_key
from app.catalog.scopes import scope_by_slug
from app.catalog.snapshot import load_scope_snapshot
from app.errors import AppError, BadInput, Conflict, StalePlan
from app.graph import policies, store
from app.graph.events import append_event
from app.iac.apply import apply_plan
from app.iac.document import Document, DocumentError, parse_document
from app.iac.export import export_scope
from app.iac.graph import graph_state, planned_instances, state_name
from app.iac.plan import Plan, PlanError, make_plan, record_tables
from app.iac.state import StateRow, public_view, rows_of


@dataclass(frozen=True)
class Applied:
    state_name: str
    serial: int
    summary: dict[str, int]
    plan: Plan


def _parse(document: bytes) -> Document:
    try:
        return parse_document(document)
    except DocumentError as exc:
        raise _rejected(exc) from None


def _rejected(exc: DocumentError) -> AppError:
    error = Conflict if isinstance(exc, PlanError) and exc.claimed else BadInput
    return error(str(exc), {"errors": exc.as_dicts()})


async def _plan(
    conn: asyncpg.Connection, scope_id: Any, doc: Document
) -> tuple[Plan, list[StateRow]]:
    snapshot = await load_scope_snapshot(conn, scope_id)
    rows = await rows_of(conn, scope_id, None)  # every system's: claims matter
    wanted = record_tables(doc, rows, snapshot)
    found = await list_records_by_key(conn, wanted) if wanted else {}
    records = {tid: [r["values"] for r in rs] for tid, rs in found.items()}
    try:
        return make_plan(doc, rows, snapshot, records), rows
    except PlanError as exc:
        raise _rejected(exc) from None


async def plan(conn: asyncpg.Connection, scope: str, document: bytes) -> Plan:
    """The plan, with the policy violations applying it would open (those of enforced
    policies will refuse the apply)."""
    doc = _parse(document)
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        scope_row = await scope_by_slug(conn, scope)
        result, rows = await _plan(conn, scope_row["id"], doc)
        if not result.changes_anything:  # its apply writes no graph version
            return result
        planned = planned_instances(result, rows)
        found = await policies.preview(conn, state_name(scope, doc.system), planned)
        return dataclasses.replace(result, violations=tuple(found))


async def apply(
    conn: asyncpg.Connection, scope: str, document: bytes, plan_hash: str, *, actor: str
) -> Applied:
    doc = _parse(document)
    async with conn.transaction():
        scope_row = await scope_by_slug(conn, scope)
        scope_id = scope_row["id"]
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", f"iac:{scope_id}/{doc.system}"
        )
        fresh, rows = await _plan(conn, scope_id, doc)
        if fresh.hash != plan_hash:
            raise StalePlan(
                "the plan is stale: the document, the state or the live resources changed "
                "since it was made (plan again and review)"
            )
        after = await apply_plan(conn, scope_id, fresh, rows)
        name = state_name(scope, doc.system)
        state_id = await store.ensure_state(conn, name, "iac")
        current = await store.current_version(conn, state_id)
        detail = {"scope": scope, "system": doc.system, "summary": fresh.summary}
        if current is not None and not fresh.changes_anything:
            await append_event(
                conn,
                state_name=name,
                state_id=state_id,
                action="apply",
                actor=actor,
                serial=current["serial"],
                detail={**detail, "changed": False},
            )
            return Applied(name, current["serial"], fresh.summary, fresh)
        serial = current["serial"] + 1 if current else 1
        lineage = current["lineage"] if current else str(uuid.uuid4())
        body, state = graph_state(after, serial=serial, lineage=lineage, system=doc.system)
        written = await store.write_version(
            conn, name, body, actor=actor, action="apply", kind="iac", state=state, detail=detail
        )
        policies.refuse_enforced(written.violations)  # rolls the whole apply back
        return Applied(name, written.serial, fresh.summary, fresh)


async def export(conn: asyncpg.Connection, scope: str, system: str) -> bytes:
    scope_row = await scope_by_slug(conn, scope)
    return await export_scope(conn, scope_row["id"], system)


async def state(conn: asyncpg.Connection, scope: str, system: str | None) -> list[dict[str, Any]]:
    scope_row = await scope_by_slug(conn, scope)
    return [public_view(row) for row in await rows_of(conn, scope_row["id"], system)]
