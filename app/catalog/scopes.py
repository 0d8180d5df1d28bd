"""Scopes: isolated workspaces with a UUID and a unique, human-readable slug.
Deleting one removes everything in it (foreign keys cascade)."""

from collections.abc import Mapping
from typing import Any

import asyncpg

from app.catalog import store
from app.catalog.kinds import SCOPE, validate
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
