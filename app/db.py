"""The database: connection pool, JSONB codecs, migrations, embedded fallback.

With DATABASE_URL unset, PostgreSQL comes from the `pgserver` package, with its
data under $INFRAGRAPH_HOME (default ./.infragraph), reused on the next start.
"""

import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, cast

import asyncpg

from app import jsonutil
from app.config import Settings

log = logging.getLogger("infragraph.db")

# A row as the domain reads it: an asyncpg Record, or a dict built from one.
Row = Mapping[str, Any] | asyncpg.Record

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"
# Any fixed 64-bit number: held while migrating so two servers starting together do not race.
MIGRATION_LOCK_KEY = 0x1AF2A_6A0F

_embedded: Any = None  # the pgserver handle, kept alive for the process


def embedded_url(home: Path) -> str:
    """Start (or reuse) the embedded PostgreSQL under `home` and return its URL."""
    global _embedded
    if _embedded is None:
        from pgserver.postgres_server import get_server  # lazily: only without DATABASE_URL

        home.mkdir(parents=True, exist_ok=True)
        _embedded = get_server(home / "pgdata", cleanup_mode="stop")
    return str(_embedded.get_uri())


def database_url(settings: Settings) -> str:
    return settings.database_url or embedded_url(settings.home)


def _encode_jsonb(value: Any) -> bytes:
    return b"\x01" + jsonutil.dumps(value)  # binary jsonb: version byte, then text


def _decode_jsonb(data: bytes) -> Any:
    return jsonutil.loads(data[1:])


async def init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec(
        "jsonb", schema="pg_catalog", encoder=_encode_jsonb, decoder=_decode_jsonb, format="binary"
    )


async def _reset(conn: asyncpg.Connection) -> None:
    """What a connection needs before it goes back to the pool: only an unfinished
    transaction rolled back. The app keeps no session state (no SET, LISTEN, cursors
    or session advisory locks on pool connections), so asyncpg's default reset, one
    more round trip per request (RESET ALL, UNLISTEN, ...), would buy nothing."""
    if conn.is_in_transaction():
        await conn.execute("ROLLBACK")


async def create_pool(
    url: str, *, statement_timeout_ms: int = 30_000, **kwargs: Any
) -> asyncpg.Pool:
    pool = await asyncpg.create_pool(
        url,
        init=init_connection,
        reset=_reset,
        # JIT compiles a statement the planner prices high (a blast-radius walk) for
        # ~0.6 s, longer than running it: not worth it for a server's short queries.
        server_settings={"statement_timeout": str(statement_timeout_ms), "jit": "off"},
        **kwargs,
    )
    assert pool is not None
    return pool


@contextlib.asynccontextmanager
async def connection(pool: asyncpg.Pool) -> AsyncIterator[asyncpg.Connection]:
    """A connection of `pool` for the block. asyncpg lends a proxy that forwards every call
    to the Connection; it is typed as that Connection, which domain functions take."""
    async with pool.acquire() as proxy:
        yield cast(asyncpg.Connection, proxy)


def migration_files(directory: Path = MIGRATIONS_DIR) -> list[Path]:
    return sorted(directory.glob("[0-9][0-9][0-9][0-9]_*.sql"))


async def migrate(
    conn: asyncpg.Connection, directory: Path = MIGRATIONS_DIR, *, until: int | None = None
) -> list[str]:
    """Apply pending migrations in order, each in its own transaction; with `until`, only
    those numbered up to it (a database as an older release left it). Returns their names."""
    applied: list[str] = []
    await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK_KEY)
    try:
        await conn.execute(
            """CREATE TABLE IF NOT EXISTS schema_migrations (
                   name text PRIMARY KEY,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        done = {r["name"] for r in await conn.fetch("SELECT name FROM schema_migrations")}
        for path in migration_files(directory):
            if path.name in done:
                continue
            if until is not None and int(path.name[:4]) > until:
                break
            async with conn.transaction():
                await conn.execute(path.read_text())
                await conn.execute("INSERT INTO schema_migrations (name) VALUES ($1)", path.name)
            log.info("applied migration %s", path.name)
            applied.append(path.name)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK_KEY)
    return applied
