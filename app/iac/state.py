"""IaC state: one row per managed resource of a (scope, system), and its SQL.

The persistent key is (scope, system, resource_type, ref); the planner works on one map
per (scope, system) keyed by ref alone (`state_map`). Rows of different types sharing
a ref are corruption: the map keeps one, says so, and every user of the map checks
resource_type before acting on a row.
"""

import hashlib
import hmac
import logging
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import asyncpg

from app import crypto
from app.iac.exactjson import canonical
from app.secretnames import is_secret_name

log = logging.getLogger("infragraph.iac")

SEALED_PREFIX = "hmac-sha256:"
_COLUMNS = (
    "scope_id",
    "system",
    "resource_type",
    "ref",
    "resource_id",
    "table_id",
    "last_applied_spec",
    "updated_at",
)


@dataclass(frozen=True, slots=True)
class StateRow:
    system: str
    resource_type: str
    ref: str
    resource_id: str
    table_id: str | None
    last_applied_spec: Mapping[str, Any] = field(default_factory=dict)
    updated_at: datetime | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.resource_type, self.ref)


def is_secret(key: str) -> bool:
    """Keys whose values never reach last_applied_spec (iac.md, decided; the names are
    app/secretnames.py's, shared with the catalog and Terraform backend configs)."""
    return is_secret_name(key)


def seal_secrets(value: Any, key: bytes) -> Any:
    """`value` with every secret value, at any depth, replaced by its keyed hash
    (`hmac-sha256:` + HMAC-SHA256 under the server's key of its canonical JSON): what
    state remembers, so plan can tell intent from drift on a field holding a secret
    without the secret ever being stored."""
    if isinstance(value, dict):
        return {
            k: _sealed(v, key) if is_secret(k) else seal_secrets(v, key) for k, v in value.items()
        }
    if isinstance(value, list):
        return [seal_secrets(v, key) for v in value]
    return value


def _resealed(value: Any, key: bytes) -> Any:
    """`seal_secrets`, leaving the values sealed already as they are."""
    if isinstance(value, dict):
        return {
            k: (v if isinstance(v, str) and v.startswith(SEALED_PREFIX) else _sealed(v, key))
            if is_secret(k)
            else _resealed(v, key)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_resealed(v, key) for v in value]
    return value


async def reseal_state_secrets(conn: asyncpg.Connection, key: bytes) -> int:
    """Rows whose last_applied_spec holds a secret in clear (remembered before its key was
    named secret): the secret replaced by its keyed hash (`infragraph rotate-key`)."""
    done = 0
    for row in await conn.fetch("SELECT ctid, last_applied_spec FROM iac_state FOR UPDATE"):
        sealed = _resealed(row["last_applied_spec"], key)
        if sealed != row["last_applied_spec"]:
            await conn.execute(
                "UPDATE iac_state SET last_applied_spec = $2 WHERE ctid = $1", row["ctid"], sealed
            )
            done += 1
    return done


def _sealed(value: Any, key: bytes) -> str:
    return SEALED_PREFIX + hmac.new(key, canonical(value), hashlib.sha256).hexdigest()


async def secret_key(conn: asyncpg.Connection, configured: str | None) -> bytes:
    """The key of `seal_secrets`: INFRAGRAPH_SECRET_KEY when set, else the one kept in the
    database, made on first use. Call it outside a read-only transaction."""
    if configured:
        return configured.encode()
    stored = await conn.fetchval("SELECT key FROM iac_secret_key")
    if stored is None:
        await conn.execute(
            "INSERT INTO iac_secret_key (key) VALUES ($1) ON CONFLICT DO NOTHING",
            seal_hash_key(secrets.token_bytes(HASH_KEY_BYTES)),
        )
        stored = await conn.fetchval("SELECT key FROM iac_secret_key")
    return open_hash_key(stored)


HASH_KEY_BYTES = 32
_HASH_KEY_CONTEXT = b"iac_secret_key"


def seal_hash_key(key: bytes) -> bytes:
    """The database-kept key as stored: sealed under INFRAGRAPH_ENCRYPTION_KEY when set
    (app/crypto.py), as with it a dump would let anyone check a guessed secret."""
    return crypto.keyring().seal(key, _HASH_KEY_CONTEXT)


def open_hash_key(stored: bytes) -> bytes:
    return crypto.keyring().open_fixed(bytes(stored), HASH_KEY_BYTES, _HASH_KEY_CONTEXT)


async def reseal_hash_key(conn: asyncpg.Connection) -> int:
    """The database-kept key sealed under the current key (`infragraph rotate-key`);
    1 when it was re-sealed."""
    stored = await conn.fetchval("SELECT key FROM iac_secret_key")
    if stored is None:
        return 0
    stored, prefix = bytes(stored), crypto.keyring().prefix
    clear = len(stored) == HASH_KEY_BYTES
    if clear if prefix is None else not clear and stored.startswith(prefix):
        return 0  # stored as the current keyring stores it
    resealed = seal_hash_key(open_hash_key(stored))
    await conn.execute("UPDATE iac_secret_key SET key = $1", resealed)
    return 1


def state_map(
    rows: Iterable[StateRow], prefer: Mapping[str, str] | None = None
) -> tuple[dict[str, StateRow], list[str]]:
    """One system's rows keyed by ref, and a warning per ref that several types share.

    The survivor of a collision is the row of the kind the document declares for that
    ref (`prefer`: ref -> kind) if there is one, else the first by type name: a fixed
    choice, but callers still check resource_type (nothing may rely on the survivor)."""
    by_ref: dict[str, list[StateRow]] = {}
    for row in rows:
        by_ref.setdefault(row.ref, []).append(row)
    out: dict[str, StateRow] = {}
    warnings: list[str] = []
    wanted = prefer or {}
    for ref, group in by_ref.items():
        group.sort(key=lambda r: (r.resource_type != wanted.get(ref), r.resource_type))
        out[ref] = group[0]
        if len(group) > 1:
            types = ", ".join(r.resource_type for r in group)
            message = (
                f"corrupt IaC state: rows of types {types} share the ref {ref}; "
                f"using the {group[0].resource_type} row and ignoring the others "
                f"(release the wrong one)"
            )
            log.warning("system %s: %s", group[0].system, message)
            warnings.append(message)
    return out, warnings


def _row(record: asyncpg.Record) -> StateRow:
    table_id = record["table_id"]
    return StateRow(
        record["system"],
        record["resource_type"],
        record["ref"],
        record["resource_id"],
        str(table_id) if table_id is not None else None,
        record["last_applied_spec"],
        record["updated_at"],
    )


async def rows_of(conn: asyncpg.Connection, scope_id: Any, system: str | None) -> list[StateRow]:
    """One system's rows (all systems' with None), by system then ref."""
    records = await conn.fetch(
        f"""SELECT {", ".join(_COLUMNS[1:])} FROM iac_state
            WHERE scope_id = $1 AND ($2::text IS NULL OR system = $2)
            ORDER BY system, ref, resource_type""",
        str(scope_id),
        system,
    )
    return [_row(r) for r in records]


async def rows_by_scope(conn: asyncpg.Connection) -> dict[str, list[StateRow]]:
    """Every scope's rows by its id (as text), by system then ref."""
    records = await conn.fetch(
        f"""SELECT {", ".join(_COLUMNS)} FROM iac_state
            ORDER BY scope_id, system, ref, resource_type"""
    )
    rows: dict[str, list[StateRow]] = {}
    for record in records:
        rows.setdefault(str(record["scope_id"]), []).append(_row(record))
    return rows


def public_view(row: StateRow) -> dict[str, Any]:
    """Identity and time only: never last_applied_spec (iac.md, "State")."""
    updated = row.updated_at.astimezone(UTC) if row.updated_at else None
    return {
        "system": row.system,
        "resource_type": row.resource_type,
        "ref": row.ref,
        "resource_id": row.resource_id,
        "table_id": row.table_id,
        "updated_at": updated.strftime("%Y-%m-%dT%H:%M:%SZ") if updated else None,
    }


async def replace_rows(
    conn: asyncpg.Connection,
    scope_id: Any,
    system: str,
    deleted: Iterable[tuple[str, str]],
    written: Iterable[StateRow],
) -> None:
    """Delete the rows of `deleted` and of `written` (type, ref), then COPY `written` in:
    deleting first lets a resource change ref (a move) under the one-claim index."""
    written = list(written)
    keys = {*deleted, *(row.key for row in written)}
    if keys:
        types, refs = zip(*sorted(keys), strict=True)
        await conn.execute(
            """DELETE FROM iac_state s USING unnest($3::text[], $4::text[]) AS k(t, r)
               WHERE s.scope_id = $1 AND s.system = $2 AND s.resource_type = k.t
                 AND s.ref = k.r""",
            str(scope_id),
            system,
            list(types),
            list(refs),
        )
    if written:
        now = await conn.fetchval("SELECT clock_timestamp()")
        await conn.copy_records_to_table(
            "iac_state",
            columns=_COLUMNS,
            records=[
                (
                    scope_id,
                    system,
                    row.resource_type,
                    row.ref,
                    row.resource_id,
                    row.table_id,
                    dict(row.last_applied_spec),
                    now,
                )
                for row in written
            ],
        )
