"""Databases of their own for tests: a fresh, migrated database on the server of
`admin_url` (the fixtures of tests/conftest.py are made of these), and emptying one."""

import asyncio
import contextlib
import threading
import uuid
from collections.abc import AsyncIterator, Iterator

import asyncpg

from app import db


def _with_database(url: str, name: str) -> str:
    base, _, query = url.partition("?")
    base = base.rsplit("/", 1)[0] if base.count("/") > 2 else base
    return f"{base}/{name}" + (f"?{query}" if query else "")


@contextlib.asynccontextmanager
async def throwaway_database(admin_url: str, *, until: int | None = None) -> AsyncIterator[str]:
    """A fresh database on `admin_url`'s server, migrated (up to migration `until`),
    dropped on exit."""
    name = f"infragraph_test_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(admin_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = _with_database(admin_url, name)
    conn = await asyncpg.connect(url)
    try:
        await db.migrate(conn, until=until)
    finally:
        await conn.close()
    try:
        yield url
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@contextlib.contextmanager
def database_of_its_own(admin_url: str) -> Iterator[str]:
    """`throwaway_database` for sync code whose thread runs an event loop already (a
    browser test: Playwright's sync API): made and dropped on a loop of its own thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    made = throwaway_database(admin_url)
    try:
        url = asyncio.run_coroutine_threadsafe(made.__aenter__(), loop).result()
        try:
            yield url
        finally:
            asyncio.run_coroutine_threadsafe(made.__aexit__(None, None, None), loop).result()
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


async def truncate_all(connection: asyncpg.Connection) -> None:
    tables = await connection.fetch(
        """SELECT quote_ident(tablename) AS t FROM pg_tables
           WHERE schemaname = 'public' AND tablename <> 'schema_migrations'"""
    )
    if not tables:
        return
    # a server of an earlier test may still read a few tables in one transaction (its
    # background work); the TRUNCATE that deadlocks with it is rolled back, and tried again
    for attempt in range(5):
        try:
            await connection.execute(f"TRUNCATE {', '.join(r['t'] for r in tables)} CASCADE")
            return
        except asyncpg.DeadlockDetectedError:
            if attempt == 4:
                raise
            await asyncio.sleep(0.1 * (attempt + 1))


@contextlib.asynccontextmanager
async def connection_until(admin_url: str, until: int) -> AsyncIterator[asyncpg.Connection]:
    """A connection (the app's codecs) to a throwaway database migrated up to migration
    `until`: a database as it was before the migrations after it, to convert."""
    async with throwaway_database(admin_url, until=until) as url:
        pool = await db.create_pool(url, min_size=1, max_size=1)
        try:
            async with pool.acquire() as conn:
                yield conn
        finally:
            await pool.close()
