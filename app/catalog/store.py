"""Generic SQL for every catalog kind, driven by its declaration in kinds.py.

Rows come back as plain dicts with IDs as strings (a column's ID is text, the others
UUIDs: one type for callers), plus "kind". A view's column keys come back as column IDs.
"""

import contextlib
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import asyncpg

from app.catalog import sealed
from app.catalog.kinds import Kind
from app.errors import Conflict, NotFound


def _q(name: str) -> str:
    return f'"{name}"'


def _uuids_as_text(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, list):
        return [str(v) if isinstance(v, uuid.UUID) else v for v in value]
    return value


def to_dict(kind: Kind, row: asyncpg.Record, *, reveal: bool = False) -> dict[str, Any]:
    """The row as a dict, its secrets masked (app/catalog/sealed.py); put back with
    `reveal`, for what acts on them (an IaC plan), never for what is shown."""
    out = {
        "kind": kind.name,
        **{name: _uuids_as_text(value) for name, value in row.items() if name != "secrets"},
    }
    if kind.name == "view":
        out["columns"] = [f"{out['table_id']}:{key}" for key in out["columns"]]
    if not sealed.fields_of(kind):
        return out
    return sealed.revealed(kind, out, row["secrets"]) if reveal else sealed.mask_row(kind, out)


def row_id(kind: Kind, resource_id: Any) -> Any:
    """The SQL value of an ID; a malformed one names nothing, hence NotFound."""
    if kind.name == "column":
        return str(resource_id)
    try:
        return uuid.UUID(str(resource_id))
    except ValueError:
        raise NotFound(f"no {kind.name} {resource_id!r}") from None


def _conflict(kind: Kind, exc: asyncpg.UniqueViolationError, values: Mapping[str, Any]) -> Conflict:
    template = kind.conflicts.get(exc.constraint_name or "")
    try:
        message = template.format_map(values) if template else None
    except KeyError:
        message = None
    return Conflict(message or f"{kind.name} already exists", {"constraint": exc.constraint_name})


async def fetch(
    conn: asyncpg.Connection,
    kind: Kind,
    resource_id: Any,
    *,
    lock: bool = False,
    reveal: bool = False,
) -> dict[str, Any]:
    """One row; lock=True holds it (FOR NO KEY UPDATE) until the transaction ends."""
    row = await conn.fetchrow(
        f"SELECT * FROM {kind.table} WHERE id = $1" + (" FOR NO KEY UPDATE" if lock else ""),
        row_id(kind, resource_id),
    )
    if row is None:
        raise NotFound(f"no {kind.name} {resource_id!r}")
    return to_dict(kind, row, reveal=reveal)


async def by_ids(
    conn: asyncpg.Connection, kind: Kind, resource_ids: Iterable[Any]
) -> dict[str, dict[str, Any]]:
    """{ID: row} of those that exist (malformed IDs name nothing), in one query."""
    keys = []
    for resource_id in resource_ids:
        with contextlib.suppress(NotFound):
            keys.append(row_id(kind, resource_id))
    rows = await conn.fetch(f"SELECT * FROM {kind.table} WHERE id = ANY($1)", keys)
    return {str(row["id"]): to_dict(kind, row) for row in rows}


async def children(
    conn: asyncpg.Connection, kind: Kind, parent_ids: Iterable[Any], *, reveal: bool = False
) -> dict[str, list[dict[str, Any]]]:
    """The rows of each parent, in creation order: one query for any number of parents."""
    parents = [str(p) for p in parent_ids]
    out: dict[str, list[dict[str, Any]]] = {p: [] for p in parents}
    rows = await conn.fetch(
        f"""SELECT * FROM {kind.table} WHERE {kind.parent} = ANY($1::uuid[])
            ORDER BY created_at, id""",
        parents,
    )
    for row in rows:
        out[str(row[kind.parent_column])].append(to_dict(kind, row, reveal=reveal))
    return out


async def insert(
    conn: asyncpg.Connection, kind: Kind, parent_id: Any, values: Mapping[str, Any]
) -> dict[str, Any]:
    values, secrets = sealed.split_values(kind, values)
    if sealed.fields_of(kind):
        values["secrets"] = secrets
    columns = ([kind.parent] if kind.parent else []) + list(values)
    args = ([str(parent_id)] if kind.parent else []) + list(values.values())
    placeholders = ", ".join(f"${i}" for i in range(1, len(args) + 1))
    try:
        row = await conn.fetchrow(
            f"""INSERT INTO {kind.table} ({", ".join(map(_q, columns))})
                VALUES ({placeholders}) RETURNING *""",
            *args,
        )
    except asyncpg.UniqueViolationError as exc:
        raise _conflict(kind, exc, values) from None
    assert row is not None  # INSERT ... RETURNING returns the row
    return to_dict(kind, row)


async def update(
    conn: asyncpg.Connection, kind: Kind, resource_id: Any, values: Mapping[str, Any]
) -> dict[str, Any]:
    if not values:
        return await fetch(conn, kind, resource_id)
    if any(name in values for name in sealed.fields_of(kind)):
        # the secrets column holds every field's: the ones not written are kept
        current = await fetch(conn, kind, resource_id, reveal=True)
        merged = {name: current[name] for name in sealed.fields_of(kind)}
        values, secrets = sealed.split_values(kind, {**merged, **values}, current)
        values["secrets"] = secrets
    sets = ", ".join(f"{_q(name)} = ${i}" for i, name in enumerate(values, 2))
    try:
        row = await conn.fetchrow(
            f"UPDATE {kind.table} SET {sets} WHERE id = $1 RETURNING *",
            row_id(kind, resource_id),
            *values.values(),
        )
    except asyncpg.UniqueViolationError as exc:
        raise _conflict(kind, exc, values) from None
    if row is None:
        raise NotFound(f"no {kind.name} {resource_id!r}")
    return to_dict(kind, row)


async def delete(conn: asyncpg.Connection, kind: Kind, resource_id: Any) -> dict[str, Any]:
    """Delete one row (foreign keys cascade to what it holds); returns it as it was."""
    row = await conn.fetchrow(
        f"DELETE FROM {kind.table} WHERE id = $1 RETURNING *", row_id(kind, resource_id)
    )
    if row is None:
        raise NotFound(f"no {kind.name} {resource_id!r}")
    return to_dict(kind, row)
