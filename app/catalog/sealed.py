"""Secrets in the catalog's objects: values under secret keys (app/secretnames.py) of a
trigger's or command's `action`, a table's `settings` (not the server-owned keys) and a
column's `options`.

They are kept apart from the readable columns: the object's column holds MASK at their
paths, and the row's `secrets` column (migration 0021) holds them as
{field: [[path, value], ...]} JSON, sealed under INFRAGRAPH_ENCRYPTION_KEY when one is set
(app/crypto.py). Every read gives the masked object; only the reads that act on the
values (an IaC plan comparing live with desired) ask for them (`revealed`). A write that
gives MASK back at a secret's path keeps the secret it had (read, edit, write back).

A row written before migration 0021 holds its secrets in place: reads mask it by name
all the same, and `infragraph rotate-key` splits it (`reseal_catalog`).
"""

from collections.abc import Mapping
from typing import Any

import asyncpg

from app import crypto
from app.catalog.kinds import SERVER_OWNED_SETTINGS, Kind
from app.graph.sensitive import Path, Secret, join, locate, pack_form, split
from app.jsonutil import dumps, loads
from app.secretnames import MASK, masked, secret_paths

# The fields of each kind that may hold secrets.
SECRET_FIELDS: dict[str, tuple[str, ...]] = {
    "trigger": ("action",),
    "command": ("action",),
    "table": ("settings",),
    "column": ("options",),
}

Secrets = dict[str, list[Secret]]


def fields_of(kind: Kind) -> tuple[str, ...]:
    return SECRET_FIELDS.get(kind.name, ())


def _context(kind: Kind) -> bytes:
    return b"catalog " + kind.table.encode()


def _paths(field: str, value: Any) -> list[Path]:
    if field == "settings" and isinstance(value, dict):
        # the server-owned keys (a column mapping holds column names) are not authored
        value = {k: v for k, v in value.items() if k not in SERVER_OWNED_SETTINGS}
    return list(secret_paths(value))


def mask_row(kind: Kind, row: dict[str, Any]) -> dict[str, Any]:
    """`row` as readers see it: its secret fields masked by name (a row split already
    holds MASK there; one written before is masked here)."""
    for name in fields_of(kind):
        if name in row:
            value = row[name]
            owned = {}
            if name == "settings" and isinstance(value, dict):
                owned = {k: value[k] for k in SERVER_OWNED_SETTINGS if k in value}
            row[name] = {**masked(value), **owned} if owned else masked(value)
    return row


def revealed(kind: Kind, row: dict[str, Any], stored: bytes | None) -> dict[str, Any]:
    """`row` (as stored, before masking) with its secrets put back from `stored`."""
    for name, secrets in opened(kind, stored).items():
        if name in row:
            row[name] = join(row[name], secrets)
    return row


def opened(kind: Kind, stored: bytes | None) -> Secrets:
    if not stored:
        return {}
    packed = loads(crypto.keyring().open(bytes(stored), _context(kind)))
    return {
        name: [(tuple(path), value) for path, value in secrets] for name, secrets in packed.items()
    }


def split_values(
    kind: Kind, values: Mapping[str, Any], current: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], bytes | None]:
    """`values` with the secrets of their secret fields taken out (MASK in their place),
    and the stored form of what was taken (None: nothing). A MASK given where `current`
    (the row revealed, for an update) holds a secret keeps that secret."""
    out = dict(values)
    taken: Secrets = {}
    for name in fields_of(kind):
        if name not in out:
            continue
        value = out[name]
        paths = _paths(name, value)
        if current is not None and paths:
            value = _kept(value, paths, current.get(name))
        value, secrets = split(value, paths)
        for path, _ in secrets:
            value = join(value, [(path, MASK)])
        out[name] = value
        if secrets:
            taken[name] = secrets
    return out, seal(kind, taken)


def seal(kind: Kind, taken: Secrets) -> bytes | None:
    if not taken:
        return None
    packed = dumps({name: pack_form(secrets) for name, secrets in taken.items()})
    return crypto.keyring().seal(packed, _context(kind))


def _kept(value: Any, paths: list[Path], current: Any) -> Any:
    """`value` with each MASK at a secret path replaced by what `current` holds there."""
    kept: list[Secret] = []
    for path in paths:
        if locate(value, path) is None or _at(value, path) != MASK:
            continue
        if locate(current, path) is not None and (old := _at(current, path)) != MASK:
            kept.append((path, old))
    return join(value, kept)


def _at(value: Any, path: Path) -> Any:
    for key in path:
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value


async def reseal_catalog(conn: asyncpg.Connection, kinds: list[Kind]) -> int:
    """Rows of the kinds not stored as a write stores them now (secrets in place, or
    sealed under another key): split and sealed again (`infragraph rotate-key`)."""
    done = 0
    ring = crypto.keyring()
    for kind in kinds:
        names = fields_of(kind)
        if not names:
            continue
        for row in await conn.fetch(
            f"SELECT id, secrets, {', '.join(names)} FROM {kind.table} FOR UPDATE"
        ):
            readable = {name: row[name] for name in names}
            values, secrets = split_values(kind, revealed(kind, dict(readable), row["secrets"]))
            if values == readable and not _stale(row["secrets"], ring):
                continue
            sets = ", ".join(f"{name} = ${i}" for i, name in enumerate(names, 3))
            await conn.execute(
                f"UPDATE {kind.table} SET secrets = $2, {sets} WHERE id = $1",
                row["id"],
                secrets,
                *(values[name] for name in names),
            )
            done += 1
    return done


def _stale(stored: bytes | None, ring: crypto.Keyring) -> bool:
    """Stored otherwise than the keyring would store it now."""
    if stored is None:
        return False
    prefix = ring.prefix
    if prefix is None:
        return bytes(stored[:1]) == crypto.SEALED
    return not bytes(stored).startswith(prefix)
