"""A resource's history: the versions in which its address changed.

Rows are shared by the versions of their serial range (migration 0005), so the rows
of one address, ordered by serial_from, are its history: a row begins where the
address was created or changed, and a row that ends with no successor is where it
was removed. One index range scan per resource (state_id, address, serial_from).
"""

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from app.graph import shards
from app.graph.diff import AttributeChange, stored_changes
from app.graph.links import sensitive_attributes
from app.graph.resources import KEYS_AT_VERSIONS, ResourceKey, key_arrays, keys_at_versions
from app.paging import Keyset, Page

HISTORY_KEY = Keyset(("serial",), (int,))  # newest first


class Change(enum.Enum):
    CREATED = "created"
    CHANGED = "changed"
    REMOVED = "removed"


@dataclass(frozen=True)
class HistoryEntry:
    serial: int
    change: Change
    created_at: datetime | None  # of the version (None when retention removed it)
    actor: str | None
    attributes: list[AttributeChange]  # what changed in the attributes (CHANGED)
    fields: list[str]  # other fields of the instance that changed (CHANGED)


# Compared between two rows of an address besides the attributes (document key names).
_FIELDS = {
    "status": "status",
    "schema_version": "schema_version",
    "dependencies_raw": "dependencies",
    "depends_on_raw": "depends_on",
    "create_before_destroy": "create_before_destroy",
    "private": "private",
    "identity": "identity",
    "identity_schema_version": "identity_schema_version",
    "attributes_flat": "attributes_flat",
    "sensitive_attributes": "sensitive_attributes",
    "provider": "provider",
    "each": "each",
    "extra": "extra",
    "resource_extra": "resource_extra",
}


def _field(column: str, state: str | None) -> str:
    # sensitive as readers see them (app/graph/links.py)
    if column == "sensitive_attributes":
        return f"{sensitive_attributes('r', state)} AS sensitive_attributes"
    return f"r.{column}"


def _history(state: str | None) -> str:
    """The rows of each key's address; `state`: the parameter naming the keys' state (one
    state, on Citus), else each joins its key's."""
    at = state or "kv.state_id"
    keys = keys_at_versions(state) if state else KEYS_AT_VERSIONS
    return f"""
    SELECT k.ord, kv.serial AS upto, kv.state_id, r.serial_from, r.serial_to, r.attributes,
           r.secrets,
           {", ".join(_field(column, state) for column in _FIELDS)},
           vf.created_at AS from_at, vf.created_by AS from_by,
           vt.created_at AS to_at, vt.created_by AS to_by
    FROM {keys}
    JOIN resources kr ON kr.id = k.id AND kr.state_id = {at}
    JOIN resources r ON r.state_id = {at} AND r.address = kr.address
                    AND r.serial_from <= kv.serial
    LEFT JOIN state_versions vf ON vf.state_id = {at} AND vf.serial = r.serial_from
    LEFT JOIN state_versions vt ON vt.state_id = {at} AND vt.serial = r.serial_to
    ORDER BY k.ord, r.serial_from"""


_HISTORY = {sharded: _history("$3" if sharded else None) for sharded in (False, True)}


async def histories(
    conn: asyncpg.Connection,
    keys: list[ResourceKey],
    *,
    first: int,
    after: tuple[int] | None = None,
) -> dict[ResourceKey, Page[HistoryEntry]]:
    """Each resource's history up to its version, newest first (a statement per state)."""

    async def of_state(
        keys: list[ResourceKey], state: UUID | None
    ) -> dict[ResourceKey, Page[HistoryEntry]]:
        sql = _HISTORY[state is not None]
        found = await conn.fetch(sql, *key_arrays(keys), *shards.pinned(state))
        return _pages(keys, found, first, after)

    return await shards.per_state(conn, keys, lambda k: k[1], of_state)


def _pages(
    keys: list[ResourceKey],
    found: list[asyncpg.Record],
    first: int,
    after: tuple[int] | None,
) -> dict[ResourceKey, Page[HistoryEntry]]:
    rows: dict[int, list[asyncpg.Record]] = {}
    for record in found:
        rows.setdefault(record["ord"], []).append(record)
    pages = {}
    for ord, records in rows.items():
        every = _entries(records)
        entries = [e for e in every if after is None or e.serial < after[0]]
        shown = entries[:first]
        pages[keys[ord - 1]] = Page(
            shown, [(e.serial,) for e in shown], len(every), len(entries) > first
        )
    return pages


def _entries(records: list[asyncpg.Record]) -> list[HistoryEntry]:
    """The entries of one address's rows (oldest first), newest first."""
    upto = records[0]["upto"]
    entries: list[HistoryEntry] = []
    previous: asyncpg.Record | None = None
    for row in records:
        if previous is not None and previous["serial_to"] != row["serial_from"]:
            entries.append(_removed(previous))
        if previous is None or previous["serial_to"] != row["serial_from"]:
            entries.append(_entry(row, Change.CREATED, [], []))
        else:
            entries.append(_changed(previous, row))
        previous = row
    if previous is not None and previous["serial_to"] is not None:
        entries.append(_removed(previous))
    return [e for e in reversed(entries) if e.serial <= upto]


def _entry(
    row: asyncpg.Record, change: Change, attributes: list[AttributeChange], fields: list[str]
) -> HistoryEntry:
    return HistoryEntry(
        row["serial_from"], change, row["from_at"], row["from_by"], attributes, fields
    )


def _removed(row: asyncpg.Record) -> HistoryEntry:
    return HistoryEntry(row["serial_to"], Change.REMOVED, row["to_at"], row["to_by"], [], [])


def _changed(old: asyncpg.Record, new: asyncpg.Record) -> HistoryEntry:
    attributes = stored_changes(
        (old["attributes"], old["sensitive_attributes"], old["secrets"]),
        (new["attributes"], new["sensitive_attributes"], new["secrets"]),
        new["state_id"],
    )
    fields = [name for column, name in _FIELDS.items() if _differs(old[column], new[column])]
    return _entry(new, Change.CHANGED, attributes, fields)


def _differs(a: Any, b: Any) -> bool:
    return type(a) is not type(b) or a != b
