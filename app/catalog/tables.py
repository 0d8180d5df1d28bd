"""Tables: their authored fields, tags, and the server-owned settings
(`column_mapping`, kept in step with the columns; `iac`, written by IaC apply).

Writers of a table's columns or records hold its row (lock_table) for the
transaction, so a record is always checked against the columns it is stored with.
"""

from collections.abc import Mapping, Sequence
from typing import Any

import asyncpg

from app.catalog import store
from app.catalog.kinds import SCOPE, SERVER_OWNED_SETTINGS, TABLE, checked, system_tag, validate
from app.catalog.schema import TEXT
from app.errors import Conflict, NotFound


async def lock_table(conn: asyncpg.Connection, table_id: Any) -> dict[str, Any]:
    return await store.fetch(conn, TABLE, table_id, lock=True)


async def create_table(
    conn: asyncpg.Connection, scope_id: Any, spec: Mapping[str, Any]
) -> dict[str, Any]:
    values = validate(TABLE, spec, partial=False)
    values["settings"] = {**values["settings"], "column_mapping": {}}
    async with conn.transaction():
        await store.fetch(conn, SCOPE, scope_id)
        return await store.insert(conn, TABLE, scope_id, values)


async def update_table(
    conn: asyncpg.Connection, table_id: Any, changes: Mapping[str, Any]
) -> dict[str, Any]:
    """New settings replace the authored ones; the server-owned keys stay as they are."""
    values = validate(TABLE, changes, partial=True)
    async with conn.transaction():
        current = await lock_table(conn, table_id)
        if "settings" in values:
            owned = {
                k: current["settings"][k] for k in SERVER_OWNED_SETTINGS if k in current["settings"]
            }
            values["settings"] = {**values["settings"], **owned}
        return await store.update(conn, TABLE, table_id, values)


async def delete_table(conn: asyncpg.Connection, table_id: Any) -> dict[str, Any]:
    """Delete a table with its sub-resources and records. Refused while a reference
    column of another table points at it: delete or retarget that column first."""
    async with conn.transaction():
        table = await lock_table(conn, table_id)
        referencing = await conn.fetch(
            """SELECT c.name, t.name AS table_name FROM columns c
               JOIN tables t ON t.id = c.table_id
               WHERE c.type = 'reference' AND c.options ->> 'table' = $1 AND c.table_id <> $2""",
            table["id"],
            table["id"],
        )
        if referencing:
            names = ", ".join(f"{r['table_name']}.{r['name']}" for r in referencing)
            raise Conflict(
                f"table {table['name']!r} is referenced by column(s) {names}",
                {"columns": [dict(r) for r in referencing]},
            )
        await conn.execute(
            """UPDATE insight_selections SET tables = array_remove(tables, $1::uuid)
               WHERE scope_id = $2 AND $1::uuid = ANY(tables)""",
            table["id"],
            table["scope_id"],
        )
        return await store.delete(conn, TABLE, table["id"])


async def _update_returning(conn: asyncpg.Connection, sql: str, *args: Any) -> dict[str, Any]:
    row = await conn.fetchrow(sql, *args)
    if row is None:
        raise NotFound(f"no table {str(args[0])!r}")  # as given: the text of its ID
    return store.to_dict(TABLE, row)


def _tag(tag: Any) -> str:
    return str(checked(TEXT, tag, "tag", "tag"))


async def add_table_tag(conn: asyncpg.Connection, table_id: Any, tag: str) -> dict[str, Any]:
    """Add a tag (no-op when present), e.g. the implicit `system:S` of IaC."""
    return await _update_returning(
        conn,
        """UPDATE tables SET tags = CASE WHEN $2 = ANY(tags) THEN tags ELSE tags || $2 END
           WHERE id = $1 RETURNING *""",
        store.row_id(TABLE, table_id),
        _tag(tag),
    )


async def remove_table_tag(conn: asyncpg.Connection, table_id: Any, tag: str) -> dict[str, Any]:
    return await _update_returning(
        conn,
        "UPDATE tables SET tags = array_remove(tags, $2) WHERE id = $1 RETURNING *",
        store.row_id(TABLE, table_id),
        _tag(tag),
    )


async def sync_column_mapping(conn: asyncpg.Connection, table_id: Any) -> None:
    """Recompute settings.column_mapping (display name -> column key) from the columns."""
    await conn.execute(
        """UPDATE tables SET settings = jsonb_set(settings, '{column_mapping}',
               (SELECT coalesce(jsonb_object_agg(name, key), '{}')
                FROM columns WHERE table_id = $1))
           WHERE id = $1""",
        store.row_id(TABLE, table_id),
    )


async def mark_managed(
    conn: asyncpg.Connection, system: str, managed: Sequence[tuple[str, str]]
) -> None:
    """IaC tag sync: each (table ID, ref) managed by `system` carries the tag `system:S`
    and settings.iac = {system, ref}. IDs of tables that no longer exist are skipped
    (a table deleted elsewhere must not fail an apply)."""
    if not managed:
        return
    ids, refs = zip(*managed, strict=True)
    await conn.execute(
        """UPDATE tables t
           SET tags = CASE WHEN $1 = ANY(t.tags) THEN t.tags ELSE t.tags || $1 END,
               settings = jsonb_set(t.settings, '{iac}',
                                    jsonb_build_object('system', $2::text, 'ref', m.ref))
           FROM unnest($3::uuid[], $4::text[]) AS m(id, ref)
           WHERE t.id = m.id
             AND NOT ($1 = ANY(t.tags) AND t.settings -> 'iac' IS NOT DISTINCT FROM
                      jsonb_build_object('system', $2::text, 'ref', m.ref))""",
        system_tag(system),
        system,
        list(ids),
        list(refs),
    )


async def release_managed(conn: asyncpg.Connection, system: str, table_ids: Sequence[str]) -> None:
    """IaC release: the tables lose the tag `system:S` and settings.iac when `system`
    holds them (tables that no longer exist are skipped)."""
    await conn.execute(
        """UPDATE tables SET tags = array_remove(tags, $1), settings = settings - 'iac'
           WHERE id = ANY($3::uuid[]) AND settings -> 'iac' ->> 'system' = $2""",
        f"system:{system}",
        system,
        list(table_ids),
    )
