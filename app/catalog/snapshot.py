"""Every live resource of a scope, read in a fixed number of queries (one per kind):
the live side of an IaC plan and the input of export."""

from typing import Any

import asyncpg

from app.catalog import store
from app.catalog.kinds import RESOURCE_KINDS, SCOPE


async def load_scope_snapshot(
    conn: asyncpg.Connection, scope_id: Any, *, reveal: bool = False
) -> list[dict[str, Any]]:
    """The scope's resources as plain dicts, kinds in RESOURCE_KINDS order (tables first),
    each kind in creation order. Every dict has kind, id, scope_id, table_id (a table's
    own ID for a table; None for command and insight_selection), created_at, and the
    kind's fields (store.to_dict: IDs as strings, a column's key, a view's columns as
    column IDs), secrets masked unless `reveal` (app/catalog/sealed.py). Call it inside a
    REPEATABLE READ transaction for one consistent view."""
    scope = await store.fetch(conn, SCOPE, scope_id)
    resources: list[dict[str, Any]] = []
    table_ids: list[str] = []
    for kind in RESOURCE_KINDS.values():
        parent = scope["id"] if kind.parent == "scope_id" else None
        found = await store.children(conn, kind, [parent] if parent else table_ids, reveal=reveal)
        rows = [row for group in found.values() for row in group]
        rows.sort(key=lambda row: (row["created_at"], row["id"]))
        for row in rows:
            row.setdefault("scope_id", scope["id"])
            row.setdefault("table_id", row["id"] if kind.name == "table" else None)
        if kind.name == "table":
            table_ids = [row["id"] for row in rows]
        resources.extend(rows)
    return resources
