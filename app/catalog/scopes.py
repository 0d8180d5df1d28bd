"""Scopes: isolated workspaces with a UUID and a unique, human-readable slug.
Deleting one removes everything in it (foreign keys cascade)."""

import uuid
from collections.abc import Mapping
from typing import Any

import asyncpg

from app.catalog import store
from app.catalog.kinds import SCOPE, kind_of, validate
from app.errors import NotFound


async def create_scope(conn: asyncpg.Connection, slug: str, name: str) -> dict[str, Any]:
    return await store.insert(
        conn, SCOPE, None, validate(SCOPE, {"slug": slug, "name": name}, partial=False)
    )


async def scope_by_slug(conn: asyncpg.Connection, slug: str) -> dict[str, Any]:
    row = await conn.fetchrow("SELECT * FROM scopes WHERE slug = $1", slug)
    if row is None:
        raise NotFound(f"no scope {slug!r}")
    return store.to_dict(SCOPE, row)


async def list_scopes(conn: asyncpg.Connection) -> list[dict[str, Any]]:
    rows = await conn.fetch("SELECT * FROM scopes ORDER BY created_at, id")
    return [store.to_dict(SCOPE, row) for row in rows]


async def update_scope(
    conn: asyncpg.Connection, scope_id: Any, changes: Mapping[str, Any]
) -> dict[str, Any]:
    return await store.update(conn, SCOPE, scope_id, validate(SCOPE, changes, partial=True))


async def delete_scope(conn: asyncpg.Connection, scope_id: Any) -> dict[str, Any]:
    return await store.delete(conn, SCOPE, scope_id)


async def slug_of(conn: asyncpg.Connection, kind: str, object_id: Any) -> str | None:
    """The slug of the scope holding a catalog object of `kind` (or a "record"); None
    when there is no such object (its own mutation then says so)."""
    table, parent = ("records", "table_id") if kind == "record" else _place(kind)
    if kind != "column":  # a column's ID is "{table ID}:{key}"; every other one a UUID
        try:
            object_id = uuid.UUID(str(object_id))
        except ValueError:
            return None
    through_table = "JOIN tables t ON t.id = x.table_id" if parent == "table_id" else ""
    scope_id = "t.scope_id" if parent == "table_id" else "x.scope_id"
    slug: str | None = await conn.fetchval(
        f"""SELECT s.slug FROM {table} x {through_table} JOIN scopes s ON s.id = {scope_id}
            WHERE x.id = $1""",
        object_id if kind != "column" else str(object_id),
    )
    return slug


def _place(kind: str) -> tuple[str, str]:
    """A kind's SQL table and the column naming its parent."""
    k = kind_of(kind)
    return k.table, k.parent_column
