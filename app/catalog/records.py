"""Records: the rows of a table, stored as {column key: value}.

The ordinary API gives and returns values by column name; IaC uses the internal form
by column key (insert_records_by_key, list_records_by_key). Either way a write is
checked whole before anything is stored: each value against its column's type
(values.py), required columns present (defaults filled on insert), references to
existing records of the target table, unique columns without duplicates. A null
value means "no value" and is not stored. Writers hold the table row (lock_table).
"""

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import asyncpg

from app.catalog import store
from app.catalog.kinds import COLUMN
from app.catalog.tables import lock_table
from app.catalog.values import check_value
from app.db import Row
from app.errors import BadInput, Conflict, NotFound
from app.paging import Keyset, Page, paged_sql, pages_by_owner

RECORD_KEY = Keyset(("seq",), (int,))

# A record with its table's column names ({key: name}) alongside, in one query.
_RECORD = """r.id, r.table_id, r."values", r.created_at,
    (SELECT coalesce(jsonb_object_agg(c.key, c.name), '{}') FROM columns c
     WHERE c.table_id = r.table_id) AS names"""


def _by_name(row: Row, names: Mapping[str, str]) -> dict[str, Any]:
    return {
        "id": str(row["id"]),
        "table_id": str(row["table_id"]),
        "values": {names[k]: v for k, v in row["values"].items() if k in names},
        "created_at": row["created_at"],
    }


def _names(columns: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """{column key: column name}: how records are given back."""
    return {c["key"]: c["name"] for c in columns}


async def _columns(conn: asyncpg.Connection, table_id: str) -> list[dict[str, Any]]:
    return (await store.children(conn, COLUMN, [table_id]))[table_id]


def _to_keys(
    table: Mapping[str, Any], columns: Sequence[Mapping[str, Any]], values: Any
) -> dict[str, Any]:
    if not isinstance(values, Mapping):
        raise BadInput("record values: expected an object of column name -> value")
    keys = {c["name"]: c["key"] for c in columns}
    unknown = [name for name in values if name not in keys]
    if unknown:
        raise BadInput(
            f"table {table['name']!r} has no column(s) {', '.join(map(repr, unknown))}",
            {"columns": unknown},
        )
    return {keys[name]: value for name, value in values.items()}


def _hashable(value: Any) -> Any:
    return (
        value if isinstance(value, str | int | float | bool) else json.dumps(value, sort_keys=True)
    )


async def _checked(
    conn: asyncpg.Connection,
    table: Mapping[str, Any],
    columns: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    own_ids: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Rows ({key: value}) as stored, or BadInput/Conflict naming the row and column.
    own_ids: the records being rewritten (not duplicates of themselves)."""
    by_key = {c["key"]: c for c in columns}
    checked: list[dict[str, Any]] = []
    references: list[tuple[int, Mapping[str, Any], str]] = []
    for index, row in enumerate(rows):
        clean: dict[str, Any] = {}
        for key, value in row.items():
            column = by_key.get(key)
            if column is None:
                raise BadInput(f"record #{index}: table {table['name']!r} has no column {key!r}")
            if value is None:
                continue
            try:
                clean[key] = check_value(column, value)
            except ValueError as exc:
                raise BadInput(
                    f"column {column['name']!r}: {exc}", {"row": index, "column": column["name"]}
                ) from None
            if column["type"] == "reference":
                references.append((index, column, clean[key]))
        for column in columns:
            if column["required"] and column["key"] not in clean:
                raise BadInput(
                    f"column {column['name']!r} is required",
                    {"row": index, "column": column["name"]},
                )
        checked.append(clean)
    await _check_references(conn, references)
    await _check_unique(conn, table, columns, checked, own_ids)
    return checked


async def _check_references(
    conn: asyncpg.Connection, references: Sequence[tuple[int, Mapping[str, Any], str]]
) -> None:
    if not references:
        return
    rows = await conn.fetch(
        "SELECT id::text, table_id::text FROM records WHERE id = ANY($1::uuid[])",
        list({ref for _, _, ref in references}),
    )
    found: dict[str, str] = {row["id"]: row["table_id"] for row in rows}
    for index, column, ref in references:
        if found.get(ref) != column["options"]["table"]:
            raise BadInput(
                f"column {column['name']!r}: no record {ref} in the referenced table",
                {"row": index, "column": column["name"], "record": ref},
            )


async def _check_unique(
    conn: asyncpg.Connection,
    table: Mapping[str, Any],
    columns: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    own_ids: Sequence[str],
) -> None:
    wanted: dict[str, list[Any]] = {}
    for column in (c for c in columns if c["unique"]):
        seen: set[Any] = set()
        for row in rows:
            if (value := row.get(column["key"])) is None:
                continue
            if _hashable(value) in seen:
                raise Conflict(
                    f"column {column['name']!r} is unique: {value!r} appears twice",
                    {"column": column["name"], "value": value},
                )
            seen.add(_hashable(value))
            wanted.setdefault(column["key"], []).append(value)
    if not wanted:
        return
    clash = await conn.fetchrow(
        """SELECT u.key, v.value FROM jsonb_each($2::jsonb) AS u(key, vals)
           CROSS JOIN LATERAL jsonb_array_elements(u.vals) AS v(value)
           JOIN records r ON r.table_id = $1 AND r."values" -> u.key = v.value
           WHERE r.id <> ALL($3::uuid[]) LIMIT 1""",
        table["id"],
        wanted,
        list(own_ids),
    )
    if clash is not None:
        name = next(c["name"] for c in columns if c["key"] == clash["key"])
        raise Conflict(
            f"column {name!r} is unique: {clash['value']!r} already exists",
            {"column": name, "value": clash["value"]},
        )


async def check_column_fits(conn: asyncpg.Connection, column: Mapping[str, Any]) -> None:
    """Every stored value of `column` fits its (new) type and options: a retyped column
    must not strand records. Conflict otherwise."""
    rows = await conn.fetch(
        """SELECT id::text, "values" -> $2 AS value FROM records
           WHERE table_id = $1 AND "values" ? $2""",
        column["table_id"],
        column["key"],
    )
    references = []
    for row in rows:
        try:
            value = check_value(column, row["value"])
        except ValueError as exc:
            raise Conflict(
                f"column {column['name']!r}: record {row['id']} does not fit: {exc}",
                {"record": row["id"], "column": column["name"]},
            ) from None
        if column["type"] == "reference":
            references.append((0, column, value))
    try:
        await _check_references(conn, references)
    except BadInput as exc:
        raise Conflict(exc.message, exc.detail) from None


async def _checked_new(
    conn: asyncpg.Connection,
    table: Mapping[str, Any],
    columns: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """New rows ({key: value}) with the column defaults filled in, checked (_checked)."""
    defaults = {c["key"]: c["default"] for c in columns if c["default"] is not None}
    return await _checked(conn, table, columns, [{**defaults, **row} for row in rows])


async def insert_record(conn: asyncpg.Connection, table_id: Any, values: object) -> dict[str, Any]:
    """Insert one record given by column name (`values` must be an object: checked);
    returns it by column name."""
    async with conn.transaction():
        table = await lock_table(conn, table_id)
        columns = await _columns(conn, table["id"])
        [checked] = await _checked_new(conn, table, columns, [_to_keys(table, columns, values)])
        row = await conn.fetchrow(
            """INSERT INTO records (table_id, "values") VALUES ($1, $2)
               RETURNING id, table_id, "values", created_at""",
            uuid.UUID(table["id"]),
            checked,
        )
        assert row is not None  # INSERT ... RETURNING returns the row
        return _by_name(row, _names(columns))


async def insert_records_by_key(
    conn: asyncpg.Connection, table_id: Any, rows: Sequence[Mapping[str, Any]]
) -> list[str]:
    """Insert records given by column key (IaC's internal form), all or none, by COPY.
    Returns their IDs in order."""
    async with conn.transaction():
        table = await lock_table(conn, table_id)
        checked = await _checked_new(conn, table, await _columns(conn, table["id"]), rows)
        ids = [uuid.uuid4() for _ in checked]
        table_uuid = uuid.UUID(table["id"])
        await conn.copy_records_to_table(
            "records",
            columns=("id", "table_id", "values"),
            records=[(i, table_uuid, values) for i, values in zip(ids, checked, strict=True)],
        )
        return [str(i) for i in ids]


async def get_record(conn: asyncpg.Connection, record_id: Any) -> dict[str, Any]:
    row = await conn.fetchrow(f"SELECT {_RECORD} FROM records r WHERE r.id = $1", _uuid(record_id))
    if row is None:
        raise NotFound(f"no record {record_id!r}")
    return _by_name(row, row["names"])


def _uuid(record_id: Any) -> uuid.UUID:
    try:
        return uuid.UUID(str(record_id))
    except ValueError:
        raise NotFound(f"no record {record_id!r}") from None


async def update_record(conn: asyncpg.Connection, record_id: Any, values: object) -> dict[str, Any]:
    """Change the given values (by column name; null removes one), the rest stay."""
    rid = _uuid(record_id)
    async with conn.transaction():
        table_id = await conn.fetchval("SELECT table_id FROM records WHERE id = $1", rid)
        if table_id is None:
            raise NotFound(f"no record {record_id!r}")
        # table before record: the order column writers use
        table = await lock_table(conn, table_id)
        current = await conn.fetchval('SELECT "values" FROM records WHERE id = $1 FOR UPDATE', rid)
        if current is None:
            raise NotFound(f"no record {record_id!r}")
        columns = await _columns(conn, table["id"])
        merged = {**current, **_to_keys(table, columns, values)}
        [checked] = await _checked(conn, table, columns, [merged], own_ids=[str(rid)])
        row = await conn.fetchrow(
            """UPDATE records SET "values" = $2 WHERE id = $1
               RETURNING id, table_id, "values", created_at""",
            rid,
            checked,
        )
        assert row is not None  # the record is locked: the UPDATE finds it
        return _by_name(row, _names(columns))


async def delete_record(conn: asyncpg.Connection, record_id: Any) -> dict[str, Any]:
    """Delete a record; returns it as it was (by column name)."""
    row = await conn.fetchrow(
        f"DELETE FROM records r WHERE r.id = $1 RETURNING {_RECORD}", _uuid(record_id)
    )
    if row is None:
        raise NotFound(f"no record {record_id!r}")
    return _by_name(row, row["names"])


async def records_of(
    conn: asyncpg.Connection,
    table_ids: Sequence[Any],
    *,
    first: int,
    after: tuple[int] | None = None,
) -> dict[str, Page[dict[str, Any]]]:
    """Each table's page of records by column name, in creation order, after the cursor
    key `after` (RECORD_KEY). Two statements for any number of tables (dataloaders);
    a table without records has no entry."""
    owners = [str(t) for t in table_ids]
    records = await conn.fetch(
        paged_sql(
            """SELECT r.table_id AS owner, r.id, r.seq FROM records r
               WHERE r.table_id = ANY($1::uuid[])""",
            order="seq",
            after="($2::bigint IS NULL OR seq > $2)",
            limit="$3",
            select='r.id, r.table_id, r."values", r.created_at, r.seq',
            joins="LEFT JOIN records r ON r.id = p.id",
        ),
        owners,
        after and after[0],
        first + 1,
    )
    columns = await store.children(conn, COLUMN, owners)
    names = {t: _names(cols) for t, cols in columns.items()}
    return {
        str(owner): replace(page, rows=[_by_name(r, names[str(owner)]) for r in page.rows])
        for owner, page in pages_by_owner(records, first, RECORD_KEY).items()
    }


async def list_records_by_key(
    conn: asyncpg.Connection, table_ids: Iterable[Any]
) -> dict[str, list[dict[str, Any]]]:
    """Every record of these tables in the internal form {id, values by key, created_at},
    in creation order (IaC: records whose key is found are skipped, never rewritten)."""
    out: dict[str, list[dict[str, Any]]] = {str(t): [] for t in table_ids}
    rows = await conn.fetch(
        """SELECT id, table_id, "values", created_at FROM records
           WHERE table_id = ANY($1::uuid[]) ORDER BY seq""",
        list(out),
    )
    for row in rows:
        out[str(row["table_id"])].append(
            {"id": str(row["id"]), "values": row["values"], "created_at": row["created_at"]}
        )
    return out
