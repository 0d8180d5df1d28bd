"""create/get/update/delete for the ten kinds of live resources, by kind name.

Tables and columns go to their own modules; the other eight share the generic path
(validate -> cross-row check -> store), their cross-row checks listed in _PREPARE:
a view's columns exist in its table (stored as keys), an insight selection's tables
are in its scope, a public read's view is in its table. Each write is one
transaction (a savepoint inside a caller's, e.g. an IaC apply).
"""

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import asyncpg

from app.catalog import columns, store, tables
from app.catalog.kinds import CLIENT_ACCESS, SCOPE, TABLE, Kind, kind_of, validate
from app.errors import BadInput


async def _prepare_view(conn: asyncpg.Connection, table_id: str, values: dict[str, Any]) -> None:
    """Column IDs or keys in, keys stored; the table is held so none vanishes meanwhile."""
    if "columns" not in values:
        return
    await tables.lock_table(conn, table_id)
    keys = set(
        await conn.fetchval("SELECT array_agg(key) FROM columns WHERE table_id = $1", table_id)
        or []
    )
    stored = []
    for item in values["columns"]:
        key = item.removeprefix(f"{table_id}:")
        if key not in keys:
            raise BadInput(f"view.columns: the table has no column {item!r}", {"column": item})
        stored.append(key)
    values["columns"] = stored


async def _prepare_insight(conn: asyncpg.Connection, scope_id: str, values: dict[str, Any]) -> None:
    if not values.get("tables"):
        return
    found = {
        str(t)
        for t in await conn.fetchval(
            "SELECT array_agg(id) FROM tables WHERE scope_id = $1 AND id = ANY($2::uuid[])",
            scope_id,
            values["tables"],
        )
        or []
    }
    missing = [t for t in values["tables"] if t not in found]
    if missing:
        raise BadInput(
            f"insight_selection.tables: no table {missing[0]} in this scope", {"tables": missing}
        )


async def _prepare_public_read(
    conn: asyncpg.Connection, table_id: str, values: dict[str, Any]
) -> None:
    if values.get("view") is None:
        return
    if (
        await conn.fetchval(
            "SELECT 1 FROM views WHERE id = $1 AND table_id = $2", values["view"], table_id
        )
        is None
    ):
        raise BadInput(
            f"public_read.view: no view {values['view']} in this table", {"view": values["view"]}
        )


_PREPARE: dict[str, Callable[[asyncpg.Connection, str, dict[str, Any]], Awaitable[None]]] = {
    "view": _prepare_view,
    "insight_selection": _prepare_insight,
    "public_read": _prepare_public_read,
}


async def _prepare(
    conn: asyncpg.Connection, kind: Kind, parent_id: str, values: dict[str, Any]
) -> None:
    if prepare := _PREPARE.get(kind.name):
        await prepare(conn, parent_id, values)


async def create(
    conn: asyncpg.Connection, kind: str, parent_id: Any, spec: Mapping[str, Any]
) -> dict[str, Any]:
    """Create a resource under its parent: a scope (table, command, insight_selection)
    or a table (the rest). Returns it as a dict (see store.to_dict)."""
    if kind == "table":
        return await tables.create_table(conn, parent_id, spec)
    if kind == "column":
        return await columns.create_column(conn, parent_id, spec)
    k = kind_of(kind)
    values = validate(k, spec, partial=False)
    async with conn.transaction():
        parent = await store.fetch(conn, SCOPE if k.parent == "scope_id" else TABLE, parent_id)
        await _prepare(conn, k, parent["id"], values)
        return await store.insert(conn, k, parent["id"], values)


async def get(conn: asyncpg.Connection, kind: str, resource_id: Any) -> dict[str, Any]:
    return await store.fetch(conn, kind_of(kind), resource_id)


async def by_ids(
    conn: asyncpg.Connection, kind: str, resource_ids: Iterable[Any]
) -> dict[str, dict[str, Any]]:
    """{ID: resource} of those that exist, in one query (for dataloaders)."""
    return await store.by_ids(conn, kind_of(kind), resource_ids)


async def update(
    conn: asyncpg.Connection, kind: str, resource_id: Any, changes: Mapping[str, Any]
) -> dict[str, Any]:
    """Change the given fields only; the others keep their values."""
    if kind == "table":
        return await tables.update_table(conn, resource_id, changes)
    if kind == "column":
        return await columns.update_column(conn, resource_id, changes)
    k = kind_of(kind)
    values = validate(k, changes, partial=True)
    async with conn.transaction():
        # not locked here: a view's check holds its table first, the order column writers use
        current = await store.fetch(conn, k, resource_id)
        await _prepare(conn, k, current[k.parent_column], values)
        return await store.update(conn, k, resource_id, values)


async def delete(conn: asyncpg.Connection, kind: str, resource_id: Any) -> dict[str, Any]:
    """Delete a resource (and what it holds); returns it as it was."""
    if kind == "table":
        return await tables.delete_table(conn, resource_id)
    if kind == "column":
        return await columns.delete_column(conn, resource_id)
    return await store.delete(conn, kind_of(kind), resource_id)


async def children(
    conn: asyncpg.Connection, kind: str, parent_ids: Iterable[Any]
) -> dict[str, list[dict[str, Any]]]:
    """{parent ID: its resources of `kind`, in creation order}, in one query."""
    return await store.children(conn, kind_of(kind), parent_ids)


async def set_client_access(
    conn: asyncpg.Connection, table_id: Any, spec: Mapping[str, Any]
) -> dict[str, Any]:
    """Create the table's client access, or change the given fields of the one it has."""
    async with conn.transaction():
        table = await tables.lock_table(conn, table_id)
        existing = (await store.children(conn, CLIENT_ACCESS, [table["id"]]))[table["id"]]
        if not existing:
            values = validate(CLIENT_ACCESS, spec, partial=False)
            return await store.insert(conn, CLIENT_ACCESS, table["id"], values)
        values = validate(CLIENT_ACCESS, spec, partial=True)
        return await store.update(conn, CLIENT_ACCESS, existing[0]["id"], values)
