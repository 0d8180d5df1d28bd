"""Carrying out a plan's steps on the live catalog (inside the caller's transaction).

Order (iac.md, "Apply"): deletes in reverse dependency order, then creates, moves,
adoptions and updates in dependency order (tables, columns, ..., public reads), then
records, then the state rows; orphaned rows are dropped from state before the tag
sync, and the sync skips tables that no longer exist.
"""

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import asyncpg

from app.catalog import resources, tables
from app.catalog.kinds import system_tag
from app.catalog.records import insert_records_by_key, list_records_by_key
from app.errors import BadInput
from app.iac.exactjson import canonical
from app.iac.fields import column_key
from app.iac.model import qualify
from app.iac.plan import KIND_RANK, Plan, RecordStep, Step, insert_order, reference_targets
from app.iac.state import StateRow, replace_rows
from app.jsonutil import dumps


class _Ids:
    """Qualified ref -> live ID, as this apply goes (state, then bound, then created)."""

    def __init__(self, system: str, rows: Sequence[StateRow], plan: Plan) -> None:
        self.system = system
        # never an orphaned row's dead ID (the plan refused lines naming one)
        dead = {s.row.key for s in plan.steps if s.action == "orphaned" and s.row is not None}
        self.ids = {r.key: r.resource_id for r in rows if r.key not in dead}
        self.ids.update({(r.resource_type, ref): r.resource_id for r, ref in plan.follows})
        for step in plan.steps:
            if step.live_id is not None and step.action != "delete":
                self.ids[(step.kind, step.ref)] = step.live_id

    def get(self, kind: str, qualified: str) -> str:
        try:
            return self.ids[(kind, qualified)]
        except KeyError:
            raise BadInput(f"{kind} {qualified} is not declared and not managed") from None

    def column(self, table: str, ref: str) -> str:
        return self.get("column", qualify("column", ref, table))

    def column_keys(self, table: str, values: Mapping[str, Any]) -> dict[str, Any]:
        """`values` by column ref -> by column key (the records' form)."""
        return {column_key(self.column(table, ref)): value for ref, value in values.items()}


def _catalog_fields(step: Step, fields: Mapping[str, Any], ids: _Ids) -> dict[str, Any]:
    """Authored fields (refs) -> the catalog's (IDs)."""
    line = step.line
    assert line is not None
    out = dict(fields)
    table = line.table or ""
    if "options" in out and isinstance(out["options"], dict) and "target" in out["options"]:
        options = dict(out["options"])
        options["table"] = ids.get("table", options.pop("target"))
        out["options"] = options
    if step.kind == "view" and "columns" in out:
        out["columns"] = [ids.column(table, c) for c in out["columns"]]
    if step.kind == "insight_selection" and "tables" in out:
        out["tables"] = [ids.get("table", t) for t in out["tables"]]
    if step.kind == "public_read" and "view" in out:
        view = out["view"]
        out["view"] = ids.get("view", qualify("view", view, table)) if view else None
    if step.kind == "table" and "tags" in out:
        out["tags"] = [*out["tags"], system_tag(ids.system)]
    return out


async def _create(conn: asyncpg.Connection, scope_id: Any, step: Step, ids: _Ids) -> str:
    line = step.line
    assert line is not None
    spec = _catalog_fields(step, step.writes, ids)
    if step.kind == "grant":
        spec["principal"] = line.ref
    elif step.kind == "insight_selection":
        spec["chatroom"] = line.chatroom
    elif step.kind == "public_read":
        spec["ref"] = line.ref
    elif step.kind == "table":
        spec.setdefault("tags", [system_tag(ids.system)])
    if step.kind in ("table", "command", "insight_selection"):
        parent = scope_id
    else:
        parent = ids.get("table", line.table or "")
    if step.kind == "client_access":
        created = await resources.set_client_access(conn, parent, spec)
    else:
        created = await resources.create(conn, step.kind, parent, spec)
    live_id: str = created["id"]
    return live_id


async def _update(conn: asyncpg.Connection, step: Step, ids: _Ids) -> None:
    if not step.writes:
        return
    fields = _catalog_fields(step, step.writes, ids)
    assert step.live_id is not None
    await resources.update(conn, step.kind, step.live_id, fields)


def _table_id(step: Step, live_id: str, ids: _Ids) -> str | None:
    if step.kind == "table":
        return live_id
    table = step.line.table if step.line is not None else None
    return None if table is None else ids.get("table", table)  # None: command, insight


async def apply_plan(
    conn: asyncpg.Connection, scope_id: Any, plan: Plan, rows: Sequence[StateRow]
) -> list[StateRow]:
    """Carry out `plan` (made from `rows`, this system's state); returns the state rows
    of the system afterwards. The caller holds the transaction."""
    own = [r for r in rows if r.system == plan.system]
    ids = _Ids(plan.system, own, plan)
    deleted: set[tuple[str, str]] = set()
    written: dict[tuple[str, str], StateRow] = {}
    dead_tables: set[str] = set()

    for step in sorted(
        (s for s in plan.steps if s.action == "delete"), key=lambda s: -KIND_RANK[s.kind]
    ):
        assert step.live_id is not None
        await resources.delete(conn, step.kind, step.live_id)
        if step.kind == "table":
            dead_tables.add(step.live_id)
        if step.row is not None:
            deleted.add(step.row.key)
        deleted.add((step.kind, step.ref))
    for step in plan.steps:
        if step.action == "orphaned" and step.row is not None:
            deleted.add(step.row.key)

    # Renames in two steps: each renamed column first takes a name no column has, so
    # one apply may swap names or give a freed name to another column (names are unique
    # per table).
    for step in plan.steps:
        if step.kind == "column" and step.live_id is not None and "name" in step.writes:
            await resources.update(conn, "column", step.live_id, {"name": f"~{uuid.uuid4()}"})

    for step in sorted(plan.steps, key=lambda s: KIND_RANK[s.kind]):
        # declared present: create, update, move, adopt or noop (absent lines only delete)
        if step.line is None or step.line.absent or step.action in ("delete", "orphaned"):
            continue
        if step.action == "create":
            live_id = await _create(conn, scope_id, step, ids)
            ids.ids[(step.kind, step.ref)] = live_id
        else:
            assert step.live_id is not None
            live_id = step.live_id
            await _update(conn, step, ids)
        remembered = dict(step.remembered)
        if step.row is not None and step.row.key != (step.kind, step.ref):
            deleted.add(step.row.key)  # a move: the old ref's row goes
        unchanged = (
            step.row is not None
            and step.row.ref == step.ref
            and step.row.resource_id == live_id
            and dict(step.row.last_applied_spec) == remembered
        )
        if not unchanged:
            row = StateRow(
                plan.system, step.kind, step.ref, live_id, _table_id(step, live_id, ids), remembered
            )
            written[row.key] = row

    await _insert_records(conn, plan, ids)

    # Undeclared sub-resources of a renamed table follow it to the new table ref.
    for row, ref in plan.follows:
        deleted.add(row.key)
        written[(row.resource_type, ref)] = replace(row, ref=ref)

    # Rows of sub-resources of deleted tables went with their tables.
    deleted |= {r.key for r in own if r.table_id in dead_tables}
    deleted -= set(written)
    await replace_rows(conn, scope_id, plan.system, deleted, written.values())
    after = {r.key: r for r in own if r.key not in deleted}
    after.update(written)
    # Orphans are gone from `after` before the tag sync; the sync skips dead tables.
    managed_tables = [(r.resource_id, r.ref) for r in after.values() if r.resource_type == "table"]
    await tables.mark_managed(conn, plan.system, managed_tables)
    return sorted(after.values(), key=lambda r: (r.ref, r.resource_type))


async def _insert_records(conn: asyncpg.Connection, plan: Plan, ids: _Ids) -> None:
    """Insert the plan's records, table by table, referenced tables first. A reference
    value may be the key of a record of the target table (`{"name": "Acme"}`, as export
    writes it): it is resolved to that record's ID, among records live or just inserted
    (each target table's records read once, after its own records went in)."""
    targets = reference_targets(step.line for step in plan.steps if step.line is not None)
    by_table: dict[str, list[RecordStep]] = {}
    for record in plan.records:
        by_table.setdefault(record.table, []).append(record)
    found: dict[str, list[dict[str, Any]]] = {}  # target table ref -> its records
    for table in insert_order(plan.records, targets):
        rows = []
        for record in by_table[table]:
            row = {}
            for ref, value in record.values.items():
                target = targets.get((table, ref))
                if target is not None and isinstance(value, dict):
                    if target not in found:
                        target_id = ids.get("table", target)
                        found[target] = (await list_records_by_key(conn, [target_id]))[target_id]
                    value = _record_id(found[target], ids, target, value, record.line)
                row[column_key(ids.column(table, ref))] = value
            rows.append(row)
        await insert_records_by_key(conn, ids.get("table", table), rows)
        found.pop(table, None)  # read again if a later table refers to it


def _record_id(
    records: Sequence[Mapping[str, Any]],
    ids: _Ids,
    table: str,
    key: Mapping[str, Any],
    line: int,
) -> str:
    """The ID of the one record of `table` holding the values of `key` (by column ref)."""
    wanted = {k: canonical(v) for k, v in ids.column_keys(table, key).items()}
    matches: list[str] = [
        r["id"]
        for r in records
        if all(k in r["values"] and canonical(r["values"][k]) == v for k, v in wanted.items())
    ]
    if len(matches) != 1:
        raise BadInput(
            f"line {line} (record): the reference {dumps(key).decode()} matches "
            f"{len(matches)} records of table {table}, not one",
            {"line": line, "table": table, "key": dict(key)},
        )
    return matches[0]
