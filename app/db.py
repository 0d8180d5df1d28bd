"""The database: connection pool, JSONB codecs, migrations, embedded fallback,
and what a database failure means to a client.

With DATABASE_URL unset, PostgreSQL comes from the `pgserver` package, with its
data under $INFRAGRAPH_HOME (default ./.infragraph), reused on the next start.
"""

import contextlib
import logging
import time
import warnings
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import asyncpg
from asyncpg.exceptions import _base as asyncpg_base

from app import citus as sharding
from app import jsonutil
from app.config import Settings
from app.errors import AppError, BadInput, LimitExceeded, Unavailable

log = logging.getLogger("infragraph.db")

# The wheel carries the migrations inside the package (pyproject's force-include);
# a source checkout has them at the top of the repository.
_PACKAGED_MIGRATIONS = Path(__file__).resolve().parent / "migrations"
MIGRATIONS_DIR = (
    _PACKAGED_MIGRATIONS
    if _PACKAGED_MIGRATIONS.is_dir()
    else Path(__file__).resolve().parent.parent / "migrations"
)
# A row as the domain reads it: an asyncpg Record, or a dict built from one.
Row = Mapping[str, Any] | asyncpg.Record
# Any fixed 64-bit number: held while migrating so two servers starting together do not race.
MIGRATION_LOCK_KEY = 0x1AF2A_6A0F

_embedded: Any = None  # the pgserver handle, kept alive for the process


def import_pgserver() -> ModuleType:
    """The `pgserver` package, imported lazily (only without DATABASE_URL).

    On import it asks platformdirs for the user's runtime directory (for a lock file
    and a fallback socket directory); where XDG_RUNTIME_DIR is unset (containers, CI,
    a fresh login over ssh) platformdirs warns and uses /tmp/runtime-<uid>, which is
    what we want: that warning, and only it, is silenced here."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        import pgserver
    return pgserver


def embedded_url(home: Path) -> str:
    """Start (or reuse) the embedded PostgreSQL under `home` and return its URL."""
    global _embedded
    if _embedded is None:
        pgserver = import_pgserver()
        home.mkdir(parents=True, exist_ok=True)
        _embedded = pgserver.get_server(home / "pgdata", cleanup_mode="stop")
    return str(_embedded.get_uri())


def database_url(settings: Settings) -> str:
    return settings.database_url or embedded_url(settings.home)


def _encode_jsonb(value: Any) -> bytes:
    return b"\x01" + jsonutil.dumps(value)  # binary jsonb: version byte, then text


def _decode_jsonb(data: bytes) -> Any:
    return jsonutil.loads(data[1:])


class Connection(asyncpg.Connection):
    """The pool's connections: asyncpg's, knowing whether their database is sharded
    (Citus: app/graph/shards.py)."""

    sharded = False


async def init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec(
        "jsonb", schema="pg_catalog", encoder=_encode_jsonb, decoder=_decode_jsonb, format="binary"
    )
    if type(conn) is Connection:  # the pool's (asyncpg's isinstance answers for proxies)
        conn.sharded = await sharding.installed(conn)


async def _reset(conn: asyncpg.Connection) -> None:
    """What a connection needs before it goes back to the pool: only an unfinished
    transaction rolled back. The app keeps no session state (no SET, LISTEN, cursors
    or session advisory locks on pool connections), so asyncpg's default reset, one
    more round trip per request (RESET ALL, UNLISTEN, ...), would buy nothing."""
    if conn.is_in_transaction():
        await conn.execute("ROLLBACK")


class Pool:
    """The server's connection pool: asyncpg's, made by `asyncpg.create_pool`, whose
    `acquire` here gives up after `acquire_timeout` seconds (TimeoutError, which
    `expected` makes a 503) instead of waiting forever, counts the requests waiting
    (for /metrics), and tells `outage` when work goes through again."""

    def __init__(self, pool: asyncpg.Pool, acquire_timeout: float | None) -> None:
        self.pool = pool  # asyncpg's own
        self.acquire_timeout = acquire_timeout
        self.waiting = 0

    def acquire(self, *, timeout: float | None = None) -> "_Acquire":
        return _Acquire(self, self.acquire_timeout if timeout is None else timeout)

    async def release(self, conn: Any) -> None:  # asyncpg's proxy of a Connection
        await self.pool.release(conn)

    async def close(self) -> None:
        await self.pool.close()

    def get_size(self) -> int:
        return self.pool.get_size()

    def get_idle_size(self) -> int:
        return self.pool.get_idle_size()

    def get_max_size(self) -> int:
        return self.pool.get_max_size()


class ConnectionLost(ConnectionError):
    """The database closed a connection while work held it (an outage, not a bug)."""


class _Acquire:
    def __init__(self, pool: Pool, timeout: float | None) -> None:
        self.pool = pool
        self.timeout = timeout
        self.conn: Any = None  # asyncpg's proxy of a Connection

    async def __aenter__(self) -> asyncpg.Connection:
        self.began = time.monotonic()
        self.pool.waiting += 1
        try:
            self.conn = await self.pool.pool.acquire(timeout=self.timeout)
        finally:
            self.pool.waiting -= 1
        return cast(asyncpg.Connection, self.conn)

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: object
    ) -> None:
        assert self.conn is not None
        # asyncpg takes a connection the database closed back into its pool at once,
        # even while it is lent out: the proxy lent is detached, and the work's next
        # statement (or its transaction's end) fails as a use of a released or closed
        # connection, with nothing saying the database went away.
        taken_back = self.conn._con is None
        await self.pool.release(self.conn)
        if kind is None:  # the work on this connection went through
            outage.ended(self.began)
        elif taken_back and isinstance(exc, asyncpg.InterfaceError):
            raise ConnectionLost("the database closed the connection during the work") from exc


async def create_pool(
    url: str,
    *,
    statement_timeout_ms: int = 30_000,
    min_size: int = 0,  # a floor is kept by reconnecting in the background, logging
    # a traceback a try while the database is down: connections are made on demand
    max_size: int = 10,
    acquire_timeout: float | None = None,
) -> Pool:
    pool = await asyncpg.create_pool(
        url,
        min_size=min_size,
        max_size=max_size,
        max_queries=50_000,
        max_inactive_connection_lifetime=300.0,
        init=init_connection,
        reset=_reset,
        connection_class=Connection,
        record_class=asyncpg.Record,
        # JIT compiles a statement the planner prices high (a blast-radius walk) for
        # ~0.6 s, longer than running it: not worth it for a server's short queries.
        server_settings={"statement_timeout": str(statement_timeout_ms), "jit": "off"},
    )
    return Pool(pool, acquire_timeout)


@contextlib.asynccontextmanager
async def connection(pool: Pool) -> AsyncIterator[asyncpg.Connection]:
    """A connection of `pool` for the block. asyncpg lends a proxy that forwards every call
    to the Connection; it is typed as that Connection, which domain functions take."""
    async with pool.acquire() as proxy:
        yield proxy


# Failures of the database rather than of the request: the client may retry.
_UNAVAILABLE = (
    OSError,  # refused, reset, unreachable; ConnectionLost
    TimeoutError,  # no pool connection in time, or connecting took too long
    asyncpg.PostgresConnectionError,  # lost mid-statement
    asyncpg.exceptions.OperatorInterventionError,  # shutting down, starting, statement timeout
    asyncpg.exceptions.InsufficientResourcesError,  # disk full, out of memory, connections
)


# What `expected` may recognise (for exception handlers registered by type).
ERROR_TYPES = (
    *_UNAVAILABLE,
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg_base.InternalClientError,
)


def _lost_connection(exc: BaseException) -> bool:
    """A client-side error of a connection cut mid-operation: asyncpg's protocol
    out of step ("cannot switch to state"), or "the underlying connection is
    closed" raised while cleaning up (a transaction's exit) with the loss in its
    context."""
    if isinstance(exc, asyncpg_base.InternalClientError):
        return True
    seen: BaseException | None = exc
    while isinstance(seen, asyncpg.InterfaceError | asyncpg_base.InternalClientError):
        seen = seen.__cause__ or seen.__context__
        if isinstance(seen, (*_UNAVAILABLE, asyncpg_base.InternalClientError)):
            return True
    return False


def expected(exc: BaseException) -> AppError | None:
    """What a database exception means to the client, by its type; None for a bug."""
    if isinstance(exc, asyncpg.QueryCanceledError):
        return Unavailable("the database gave up on the request (statement timeout); retry")
    if isinstance(exc, _UNAVAILABLE) or _lost_connection(exc):
        outage.started(exc)
        return Unavailable("the database is unavailable; retry later")
    if isinstance(exc, asyncpg.ProgramLimitExceededError):  # an index row too big, mostly
        return LimitExceeded(f"a value is too big for the database: {exc}")
    if isinstance(exc, asyncpg.DataError | asyncpg_base.DataError):  # U+0000, out of range
        return BadInput(f"the database refused a value: {exc}")
    return None


class Outage:
    """One log line when the database becomes unavailable and one when it is back,
    rather than a traceback per request. It is back when work that began after
    the outage did goes through (work already under way may still finish)."""

    def __init__(self) -> None:
        self.down_since: float | None = None

    def started(self, exc: BaseException) -> None:
        if self.down_since is None:
            self.down_since = time.monotonic()
            log.error("database unavailable: %s: %s", type(exc).__name__, exc)

    def ended(self, began: float) -> None:
        if self.down_since is not None and began > self.down_since:
            self.down_since = None
            log.warning("database available again")


outage = Outage()


def migration_files(directory: Path = MIGRATIONS_DIR) -> list[Path]:
    return sorted(directory.glob("[0-9][0-9][0-9][0-9]_*.sql"))


async def migrate(
    conn: asyncpg.Connection,
    directory: Path = MIGRATIONS_DIR,
    *,
    until: int | None = None,
    citus: bool = False,
) -> list[str]:
    """Apply pending migrations in order, each in its own transaction; with `until`, only
    those numbered up to it (a database as an older release left it). Then, on a database
    with the citus extension (created first with `citus`), distributes what is not yet
    (app/citus.py). Returns the names of the migrations applied and a line for each
    distribution step."""
    files = migration_files(directory)
    if not files:
        raise RuntimeError(f"no migrations found in {directory}: the installation is incomplete")
    applied: list[str] = []
    await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK_KEY)
    try:
        await conn.execute(
            """CREATE TABLE IF NOT EXISTS schema_migrations (
                   name text PRIMARY KEY,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        done = {r["name"] for r in await conn.fetch("SELECT name FROM schema_migrations")}
        for path in files:
            if path.name in done:
                continue
            if until is not None and int(path.name[:4]) > until:
                break
            async with conn.transaction():
                await conn.execute(path.read_text())
                await conn.execute("INSERT INTO schema_migrations (name) VALUES ($1)", path.name)
            log.info("applied migration %s", path.name)
            applied.append(path.name)
        if until is None and (citus or await sharding.installed(conn)):
            for step in await sharding.distribute(conn, create_extension=citus):
                log.info("citus: %s", step)
                applied.append(step)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK_KEY)
    return applied


async def pending_migrations(
    conn: asyncpg.Connection, directory: Path = MIGRATIONS_DIR
) -> list[str]:
    """Migrations this code has that the database has not applied (readiness)."""
    done = await conn.fetch("SELECT name FROM schema_migrations")
    return sorted({p.name for p in migration_files(directory)} - {r["name"] for r in done})
