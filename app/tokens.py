"""API tokens kept in the database (table api_tokens, migrations 0013 and 0019): made,
listed, revoked, expired, and found by hash. Making, revoking and the expiry of a token
are events on the audit trail (`token-create`, `token-revoke`, `token-expire`, with an
empty state name: app.graph.events.TOKEN_EVENTS), written in the transaction that does
them.

A token is 256 random bits, so a fast hash is the right thing to keep: a slow password
hash (bcrypt, argon2) guards guessable secrets against guessing, and nobody guesses
2^256; a fast hash lets the lookup be one indexed equality. It is keyed (HMAC-SHA256
under a key derived from the database's secret key, app/iac/state.py, itself sealed under
INFRAGRAPH_ENCRYPTION_KEY when set), so a dump cannot confirm that a string seen
elsewhere is a live token. Tokens made before are kept as their plain SHA-256, and
still found by it.
"""

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from app.access import Principal, Role, checked_globs, checked_scopes
from app.db import Row
from app.errors import BadInput, Conflict, NotFound
from app.graph.events import TOKEN_EVENTS, append_event
from app.iac.state import open_hash_key, secret_key

TOKEN_PREFIX = "igt_"  # says what a leaked string is (and lets secret scanners find it)
TOUCH_EVERY_S = 60  # last_used_at is written at most this often per token


def token_hash(token: str) -> bytes:
    """The plain SHA-256 of a token: how tokens made before keyed hashes are kept (and a
    process's own cache key)."""
    return hashlib.sha256(token.encode()).digest()


# The process's copy of the key of keyed token hashes, with the database's sealed form it
# was opened from (a lookup reads that form too, so a key made anew is seen at no cost).
_hash_key: tuple[bytes, bytes] | None = None


def _opened(sealed: bytes) -> bytes:
    global _hash_key
    if _hash_key is None or _hash_key[0] != sealed:
        database_key = open_hash_key(sealed)
        derived = hmac.new(database_key, b"infragraph token hash", hashlib.sha256).digest()
        _hash_key = (sealed, derived)
    return _hash_key[1]


async def _key(conn: asyncpg.Connection) -> bytes:
    """The database's key as it is now (made on first use)."""
    await secret_key(conn, None)
    sealed = await conn.fetchval("SELECT key FROM iac_secret_key")
    return _opened(bytes(sealed))


def keyed_hash(token: str, key: bytes) -> bytes:
    return hmac.new(key, token.encode(), hashlib.sha256).digest()


@dataclass(frozen=True)
class Found:
    """A token found by its hash: who it is, and until when it holds."""

    principal: Principal
    expires_at: datetime | None
    revoked: bool


_COLUMNS = """name, role, state_globs, scopes, created_by, created_at, expires_at, revoked_at,
    last_used_at"""


async def create_token(
    conn: asyncpg.Connection,
    name: str,
    role: Role,
    *,
    state_globs: list[str],
    scopes: list[str],
    expires_days: float | None,
    created_by: str,
) -> tuple[Row, str]:
    """The new token's row and the token itself (shown once: only its hash is kept)."""
    if not name or not name.isprintable() or ":" in name:
        raise BadInput(f"{name!r} cannot name a token (printable characters, no ':')")
    if expires_days is not None and expires_days <= 0:
        raise BadInput(f"expires in {expires_days} days: give a positive number")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    async with conn.transaction():
        row = await conn.fetchrow(
            f"""
            INSERT INTO api_tokens (name, token_hash, role, state_globs, scopes, created_by,
                                    expires_at)
            VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7::float8 * 86400))
            ON CONFLICT (name) DO NOTHING
            RETURNING {_COLUMNS}
            """,
            name,
            keyed_hash(token, await _key(conn)),
            role.value,
            checked_globs(state_globs),
            checked_scopes(scopes),
            created_by,
            expires_days,
        )
        if row is None:
            raise Conflict(f"a token named {name!r} exists (revoke it, or pick another name)")
        await _token_event(conn, "token-create", created_by, dict(row))
    return dict(row), token


async def _token_event(conn: asyncpg.Connection, action: str, actor: str, row: Row) -> None:
    """The audit trail's record of what happened to a token (never its secret)."""
    detail: dict[str, Any] = {
        "name": row["name"],
        "role": row["role"],
        "states": row["state_globs"],
        "scopes": row["scopes"],
        "expiresAt": row["expires_at"].isoformat() if row["expires_at"] else None,
    }
    await append_event(conn, state_name=TOKEN_EVENTS, action=action, actor=actor, detail=detail)


async def list_tokens(conn: asyncpg.Connection) -> list[Row]:
    """Every token (revoked ones too), by name; never a secret or a hash."""
    return [dict(r) for r in await conn.fetch(f"SELECT {_COLUMNS} FROM api_tokens ORDER BY name")]


LAST_ADMIN_HELP = (
    "make another admin token first, or set INFRAGRAPH_API_TOKENS (name:token, a bootstrap "
    "admin) on the server and restart it"
)


async def revoke_token(
    conn: asyncpg.Connection, name: str, *, revoked_by: str, bootstrap_admin: bool
) -> Row:
    """Revoke a token (it answers 401 from then on); revoking twice keeps the first time.

    The last live admin token is not revoked unless the server has a bootstrap admin
    (`bootstrap_admin`): else nobody could ever make a token again. The live admin rows
    are held while deciding, so two revocations at once cannot both pass as not last."""
    async with conn.transaction():
        admins = await conn.fetch(
            """SELECT name FROM api_tokens
               WHERE role = 'admin' AND revoked_at IS NULL
                 AND (expires_at IS NULL OR expires_at > now())
               FOR UPDATE"""
        )
        if not bootstrap_admin and [r["name"] for r in admins] == [name]:
            raise Conflict(
                f"token {name!r} is the last live admin token: revoking it would leave nobody "
                f"able to make or revoke tokens; {LAST_ADMIN_HELP}",
                {"token": name},
            )
        live = await conn.fetchval(
            "SELECT revoked_at IS NULL FROM api_tokens WHERE name = $1 FOR UPDATE", name
        )
        if live is None:
            raise NotFound(f"no token {name!r}")
        row = await conn.fetchrow(
            f"""UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE name = $1
                RETURNING {_COLUMNS}""",
            name,
        )
        assert row is not None  # held since the SELECT
        found = dict(row)
        if live:
            await _token_event(conn, "token-revoke", revoked_by, found)
    return found


async def record_expiries(conn: asyncpg.Connection) -> list[str]:
    """Record the expiry of every token that has expired since the last call (by any
    server: each expiry is recorded once), as a `token-expire` event by whoever set it
    (the token's maker). The names of the tokens it recorded."""
    async with conn.transaction():
        expired = await conn.fetch(
            f"""
            UPDATE api_tokens SET expiry_recorded = true
            WHERE expires_at <= now() AND NOT expiry_recorded AND revoked_at IS NULL
            RETURNING {_COLUMNS}
            """
        )
        for row in expired:
            await _token_event(conn, "token-expire", row["created_by"], dict(row))
    return [r["name"] for r in expired]


async def seconds_to_next_expiry(conn: asyncpg.Connection) -> float | None:
    """How long until the next token whose expiry is not yet recorded expires, by the
    database's clock (None: no such token)."""
    found: float | None = await conn.fetchval(
        """SELECT extract(epoch FROM min(expires_at) - now())::float8 FROM api_tokens
           WHERE expires_at IS NOT NULL AND NOT expiry_recorded AND revoked_at IS NULL"""
    )
    return found


# One round trip: the token's row (none on a miss), the database's sealed key beside it,
# and last_used_at brought up to date when it is older than TOUCH_EVERY_S (so a busy token
# costs a write a minute, not one a request).
_FIND = f"""
    WITH found AS (
        SELECT name, role, state_globs, scopes, expires_at, revoked_at, last_used_at
        FROM api_tokens WHERE token_hash = ANY($1::bytea[])
    ), touched AS (
        UPDATE api_tokens t SET last_used_at = now()
        FROM found
        WHERE t.name = found.name AND found.revoked_at IS NULL
          AND (found.last_used_at IS NULL
               OR found.last_used_at < now() - make_interval(secs => {TOUCH_EVERY_S}))
    )
    SELECT (SELECT key FROM iac_secret_key) AS sealed_key, found.*
    FROM (VALUES (1)) AS one LEFT JOIN found ON true
"""


async def find_token(conn: asyncpg.Connection, token: str) -> Found | None:
    """The token kept by its keyed hash (or, made before, its plain one): one statement, a
    miss included. Only when the database's key is not the one this process holds (a
    restore, an empty database) is the token looked up again under the database's."""
    hashes = [token_hash(token)]
    if _hash_key is not None:
        hashes.append(keyed_hash(token, _hash_key[1]))
    r = await conn.fetchrow(_FIND, hashes)
    assert r is not None  # one row, found or not
    sealed = r["sealed_key"]
    if (
        r["name"] is None
        and sealed is not None
        and (_hash_key is None or _hash_key[0] != bytes(sealed))
    ):
        r = await conn.fetchrow(_FIND, [keyed_hash(token, _opened(bytes(sealed)))])
        assert r is not None
    if r["name"] is None:
        return None
    principal = Principal(r["name"], Role(r["role"]), tuple(r["state_globs"]), tuple(r["scopes"]))
    return Found(principal, r["expires_at"], r["revoked_at"] is not None)


async def access_closed(conn: asyncpg.Connection) -> bool:
    """Whether a token ever existed here (migration 0019): then the server is closed for good."""
    found: bool = await conn.fetchval("SELECT EXISTS (SELECT FROM access_closed)")
    return found


async def close_access(conn: asyncpg.Connection, reason: str) -> None:
    """Record that the server has had a token (a bootstrap one: database tokens record
    themselves); it never opens again."""
    await conn.execute(
        "INSERT INTO access_closed (reason) VALUES ($1) ON CONFLICT (only_row) DO NOTHING", reason
    )


async def any_live_admin(conn: asyncpg.Connection) -> bool:
    """Whether a database admin token that is neither revoked nor expired exists."""
    found: bool = await conn.fetchval(
        """
        SELECT EXISTS (SELECT FROM api_tokens
                       WHERE role = 'admin' AND revoked_at IS NULL
                         AND (expires_at IS NULL OR expires_at > now()))
        """
    )
    return found
