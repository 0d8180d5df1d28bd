"""What changed between two versions of a state: addresses, and attribute paths."""

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from app.errors import AppError, BadInput, NotFound
from app.graph import shards
from app.graph.links import sensitive_attributes
from app.graph.sensitive import Path, opened, overlaps, restore, sensitive_paths


@dataclass(frozen=True)
class AttributeChange:
    path: Path
    old: Any  # None when absent, or withheld (sensitive)
    new: Any
    sensitive: bool


@dataclass(frozen=True)
class ResourceChange:
    address: str
    changes: list[AttributeChange]


@dataclass(frozen=True)
class VersionDiff:
    against: int
    added: list[str]  # in this version, not in `against`
    removed: list[str]  # in `against`, not in this version
    changed: list[ResourceChange]  # in both, with different attributes


_MISSING = object()
# The rows that version `x` holds and version `y` does not: those that began after y
# and up to x (x newer), or that ended after x and up to y (x older). Each is one range
# of an index (resources_opened, resources_closed): the work follows the change.


def _only_at(x: str, y: str, state: str | None) -> str:
    """`state`: the parameter naming the versions' state (on Citus), else joined."""
    at = state or "n.state_id"
    columns = (
        f"r.id, r.address, r.attributes, {sensitive_attributes('r', state)} "
        "AS sensitive_attributes, r.secrets"
    )
    return f"""(
    SELECT {columns} FROM resources r
    WHERE r.state_id = {at} AND r.serial_from > {y}.serial
      AND r.serial_from <= {x}.serial AND (r.serial_to IS NULL OR r.serial_to > {x}.serial)
  UNION ALL
    SELECT {columns} FROM resources r
    WHERE r.state_id = {at} AND r.serial_to > {x}.serial
      AND r.serial_to <= {y}.serial AND r.serial_from <= {x}.serial)"""


# Per (version, against serial): the resources whose attributes differ, added or
# removed, compared by address inside the database (JSONB equality; rows holding
# secrets (app/graph/sensitive.py) are compared again once those are opened). Rows are shared
# by the versions of their serial range (migration 0005), so only the rows that begin
# or end between the two serials can differ: the work follows the change, not the state.
# An encrypted version has no rows to compare: its pairs get none.
def _diff(state: str | None) -> str:
    return f"""
    SELECT k.version_id, k.against, o.id AS against_id, n.state_id,
           CASE WHEN n.encrypted THEN n.serial WHEN o.encrypted THEN o.serial END AS encrypted,
           c.*
    FROM unnest($1::uuid[], $2::bigint[]) AS k (version_id, against)
    JOIN state_versions n ON n.id = k.version_id{f" AND n.state_id = {state}" if state else ""}
    LEFT JOIN state_versions o ON o.state_id = {state or "n.state_id"} AND o.serial = k.against
    LEFT JOIN LATERAL (
        SELECT coalesce(a.address, b.address) COLLATE "C" AS address,
               CASE WHEN b.id IS NULL THEN 'added' WHEN a.id IS NULL THEN 'removed'
                    ELSE 'changed' END AS change,
               b.attributes AS old_attributes, a.attributes AS new_attributes,
               b.sensitive_attributes AS old_sensitive, a.sensitive_attributes AS new_sensitive,
               b.secrets AS old_secrets, a.secrets AS new_secrets
        FROM {_only_at("n", "o", state)} a
        FULL JOIN {_only_at("o", "n", state)} b ON a.address = b.address
        WHERE a.id IS NULL OR b.id IS NULL OR a.attributes IS DISTINCT FROM b.attributes
           OR a.secrets IS DISTINCT FROM b.secrets
    ) c ON o.id IS NOT NULL AND NOT (n.encrypted OR o.encrypted)
    ORDER BY k.version_id, k.against, c.address"""


_DIFF = {sharded: _diff("$3" if sharded else None) for sharded in (False, True)}


async def diff_versions(
    conn: asyncpg.Connection, keys: list[tuple[UUID, int]]
) -> dict[tuple[UUID, int], VersionDiff | AppError]:
    """Diffs of (version id, against serial) pairs; NotFound for a serial the state lacks,
    BadInput when either version is encrypted. A statement per state (of the state $3:
    app/graph/shards.py)."""

    async def of_state(
        pairs: list[tuple[UUID, int]], state: UUID | None
    ) -> dict[tuple[UUID, int], VersionDiff | AppError]:
        records = await conn.fetch(
            _DIFF[state is not None],
            [version_id for version_id, _ in pairs],
            [against for _, against in pairs],
            *shards.pinned(state),
        )
        return _diffs(records)

    return await shards.per_state(conn, keys, lambda k: k[0], of_state)


def _diffs(records: list[asyncpg.Record]) -> dict[tuple[UUID, int], VersionDiff | AppError]:
    diffs: dict[tuple[UUID, int], VersionDiff | AppError] = {}
    for record in records:
        key = (record["version_id"], record["against"])
        if record["against_id"] is None:
            diffs[key] = NotFound(f"the state has no version at serial {record['against']}")
            continue
        if record["encrypted"] is not None:
            diffs[key] = BadInput(
                f"version {record['encrypted']} is encrypted by OpenTofu: the server cannot "
                "read its resources to compare them"
            )
            continue
        diff = diffs.setdefault(key, VersionDiff(record["against"], [], [], []))
        assert isinstance(diff, VersionDiff)
        if record["change"] == "added":
            diff.added.append(record["address"])
        elif record["change"] == "removed":
            diff.removed.append(record["address"])
        elif record["change"] == "changed":
            changes = stored_changes(
                (record["old_attributes"], record["old_sensitive"], record["old_secrets"]),
                (record["new_attributes"], record["new_sensitive"], record["new_secrets"]),
                record["state_id"],
            )
            if changes:  # none: only the sealing of equal secrets differed
                diff.changed.append(ResourceChange(record["address"], changes))
    return diffs


# A stored row's attributes, sensitive_attributes and secrets columns.
StoredAttributes = tuple[Any, Any, bytes | None]


def stored_changes(
    old: StoredAttributes, new: StoredAttributes, state_id: UUID
) -> list[AttributeChange]:
    """The attribute changes between two stored rows of an address of state `state_id`:
    their secrets are put back to be compared, then withheld with the paths Terraform
    marks sensitive."""
    old_secrets, new_secrets = opened(old[2], state_id), opened(new[2], state_id)
    sensitive = [
        *sensitive_paths(old[1]),
        *sensitive_paths(new[1]),
        *(path for path, _ in old_secrets + new_secrets),
    ]
    return attribute_changes(restore(old[0], old_secrets), restore(new[0], new_secrets), sensitive)


def attribute_changes(old: Any, new: Any, sensitive: list[Path]) -> list[AttributeChange]:
    """The leaf paths where `old` and `new` differ (objects by key, same-length lists by
    index, anything else as a whole); values at or around a sensitive path are withheld."""
    found: list[tuple[Path, Any, Any]] = []
    _walk(old, new, (), found)
    return [
        AttributeChange(path, None, None, True)
        if overlaps(path, sensitive)
        else AttributeChange(path, _present(a), _present(b), False)
        for path, a, b in found
    ]


def _walk(old: Any, new: Any, path: Path, found: list[tuple[Path, Any, Any]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(old.keys() | new.keys()):
            _walk(old.get(key, _MISSING), new.get(key, _MISSING), (*path, key), found)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            _walk(a, b, (*path, str(index)), found)
    elif isinstance(old, bool) != isinstance(new, bool) or old != new:
        found.append((path, old, new))


def _present(value: Any) -> Any:
    return None if value is _MISSING else value
