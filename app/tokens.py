"""API tokens kept in the database (table api_tokens, migration 0013): made, listed,
revoked, and found by hash.

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

import asyncpg

from app.access import Principal, Role, checked_globs, checked_scopes
from app.db import Row
from app.errors import BadInput, Conflict, NotFound
from app.iac.state import secret_key

TOKEN_PREFIX = "igt_"  # says what a leaked string is (and lets secret scanners find it)
TOUCH_EVERY_S = 60  # last_used_at is written at most this often per token


def token_hash(token: str) -> bytes:
    """The plain SHA-256 of a token: how tokens made before keyed hashes are kept (and a
    process's own cache key)."""
    return hashlib.sha256(token.encode()).digest()


_hash_key: bytes | None = None  # the process's copy of the key of keyed token hashes


async def _key(conn: asyncpg.Connection, *, reload: bool = False) -> bytes:
    global _hash_key
    if _hash_key is None or reload:
        database_key = await secret_key(conn, None)
        _hash_key = hmac.new(database_key, b"infragraph token hash", hashlib.sha256).digest()
    return _hash_key


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
    row = await conn.fetchrow(
        f"""
        INSERT INTO api_tokens (name, token_hash, role, state_globs, scopes, created_by,
                                expires_at)
        VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7 * 86400))
        ON CONFLICT (name) DO NOTHING
        RETURNING {_COLUMNS}
        """,
        name,
        keyed_hash(token, await _key(conn, reload=True)),  # the database's key as it is now
        role.value,
        checked_globs(state_globs),
        checked_scopes(scopes),
        created_by,
        expires_days,
    )
    if row is None:
        raise Conflict(f"a token named {name!r} exists (revoke it, or pick another name)")
    return dict(row), token


async def list_tokens(conn: asyncpg.Connection) -> list[Row]:
    """Every token (revoked ones too), by name; never a secret or a hash."""
    return [dict(r) for r in await conn.fetch(f"SELECT {_COLUMNS} FROM api_tokens ORDER BY name")]


async def revoke_token(conn: asyncpg.Connection, name: str) -> Row:
    """Revoke a token (it answers 401 from then on); revoking twice keeps the first time."""
    row = await conn.fetchrow(
        f"""
        UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE name = $1
        RETURNING {_COLUMNS}
        """,
        name,
    )
    if row is None:
        raise NotFound(f"no token {name!r}")
    return dict(row)


# One round trip: the token's row, and last_used_at brought up to date when it is older
# than TOUCH_EVERY_S (so a busy token costs a write a minute, not one a request).
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
    SELECT * FROM found
"""


async def find_token(conn: asyncpg.Connection, token: str) -> Found | None:
    """The token kept by its keyed hash (or, made before, its plain one). On a miss the
    key is read again: the database's may have been made anew (a restore, an empty one)."""
    key = await _key(conn)
    r = await conn.fetchrow(_FIND, [keyed_hash(token, key), token_hash(token)])
    if r is None and (fresh := await _key(conn, reload=True)) != key:
        r = await conn.fetchrow(_FIND, [keyed_hash(token, fresh)])
    if r is None:
        return None
    principal = Principal(r["name"], Role(r["role"]), tuple(r["state_globs"]), tuple(r["scopes"]))
    return Found(principal, r["expires_at"], r["revoked_at"] is not None)


async def any_live_token(conn: asyncpg.Connection) -> bool:
    """Whether a token that is neither revoked nor expired exists (then the server is closed)."""
    found: bool = await conn.fetchval(
        """
        SELECT EXISTS (SELECT FROM api_tokens
                       WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()))
        """
    )
    return found
