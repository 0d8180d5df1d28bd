"""Columns: what sets them apart from the other sub-resources.

A column's ID is "{table uuid}:{key}", the key (`col_` + 6 random base-36 characters)
naming its values inside records, so a rename touches no record. Every create, rename
and delete recomputes the table's settings.column_mapping in the same transaction.
A changed definition must still fit the stored records (type, options, required,
unique); a deleted column's values are removed from the records and from views.
"""

import secrets
import string
from collections.abc import Mapping
from typing import Any

import asyncpg

from app.catalog import store
from app.catalog.kinds import COLUMN, validate
from app.catalog.records import check_column_fits
from app.catalog.tables import lock_table, sync_column_mapping
from app.catalog.values import check_definition
from app.errors import BadInput, Conflict, NotFound

_KEY_ALPHABET = string.digits + string.ascii_lowercase


def new_key(taken: set[str]) -> str:
    while (key := "col_" + "".join(secrets.choice(_KEY_ALPHABET) for _ in range(6))) in taken:
        pass
    return key


async def _check_target(
    conn: asyncpg.Connection, table: Mapping[str, Any], options: Mapping[str, Any]
) -> None:
    """A reference column points at a table of the same scope."""
    found = await conn.fetchval(
        "SELECT 1 FROM tables WHERE id = $1 AND scope_id = $2", options["table"], table["scope_id"]
    )
    if found is None:
        raise BadInput(
            f"column.options.table: no table {options['table']} in this scope", {"field": "options"}
        )


async def _check_records(
    conn: asyncpg.Connection, column: Mapping[str, Any], before: Mapping[str, Any] | None
) -> None:
    """The table's existing records fit the new or changed column."""
    table_id, key, name = column["table_id"], column["key"], column["name"]
    if before is not None and (before["type"], before["options"]) != (
        column["type"],
        column["options"],
    ):
        await check_column_fits(conn, column)
    if column["required"] and not (before and before["required"]):
        missing = await conn.fetchval(
            """SELECT count(*) FROM records WHERE table_id = $1 AND NOT "values" ? $2""",
            table_id,
            key,
        )
        if missing:
            raise Conflict(
                f"column {name!r} cannot be required: {missing} record(s) have no value for it",
                {"column": name, "records": missing},
            )
    if column["unique"] and before is not None and not before["unique"]:
        duplicate = await conn.fetchrow(
            """SELECT "values" -> $2 AS value FROM records
               WHERE table_id = $1 AND "values" ? $2 GROUP BY 1 HAVING count(*) > 1 LIMIT 1""",
            table_id,
            key,
        )
        if duplicate is not None:
            raise Conflict(
                f"column {name!r} cannot be unique: {duplicate['value']!r} appears more than once",
                {"column": name, "value": duplicate["value"]},
            )


async def _prepared(
    conn: asyncpg.Connection, table: Mapping[str, Any], column: dict[str, Any]
) -> dict[str, Any]:
    column["options"] = check_definition(column)
    if column["type"] == "reference":
        await _check_target(conn, table, column["options"])
    return column


async def _lock_table_of(conn: asyncpg.Connection, column_id: Any) -> dict[str, Any]:
    """Hold the column's table (its ID is the column ID's prefix), so the column is then
    read as the last writer left it; a missing table is a missing column."""
    table_id, _, _ = str(column_id).partition(":")
    try:
        return await lock_table(conn, table_id)
    except NotFound:
        raise NotFound(f"no column {column_id!r}") from None


async def create_column(
    conn: asyncpg.Connection, table_id: Any, spec: Mapping[str, Any]
) -> dict[str, Any]:
    values = validate(COLUMN, spec, partial=False)
    async with conn.transaction():
        table = await lock_table(conn, table_id)
        await _prepared(conn, table, values)
        existing = (await store.children(conn, COLUMN, [table["id"]]))[table["id"]]
        values["key"] = new_key({c["key"] for c in existing})
        column = await store.insert(conn, COLUMN, table["id"], values)
        await _check_records(conn, column, None)
        await sync_column_mapping(conn, table["id"])
        return column


async def update_column(
    conn: asyncpg.Connection, column_id: Any, changes: Mapping[str, Any]
) -> dict[str, Any]:
    values = validate(COLUMN, changes, partial=True)
    async with conn.transaction():
        table = await _lock_table_of(conn, column_id)
        before = await store.fetch(conn, COLUMN, column_id)
        merged = await _prepared(conn, table, {**before, **values})
        if "options" in values or "type" in values:
            values["options"] = merged["options"]
        column = await store.update(conn, COLUMN, column_id, values)
        await _check_records(conn, column, before)
        if column["name"] != before["name"]:
            await sync_column_mapping(conn, table["id"])
        return column


async def delete_column(conn: asyncpg.Connection, column_id: Any) -> dict[str, Any]:
    async with conn.transaction():
        table = await _lock_table_of(conn, column_id)
        column = await store.delete(conn, COLUMN, column_id)
        key = column["key"]
        await conn.execute(
            """UPDATE records SET "values" = "values" - $2 WHERE table_id = $1 AND "values" ? $2""",
            table["id"],
            key,
        )
        await conn.execute(
            """UPDATE views SET columns = array_remove(columns, $2)
               WHERE table_id = $1 AND $2 = ANY(columns)""",
            table["id"],
            key,
        )
        await sync_column_mapping(conn, table["id"])
        return column
