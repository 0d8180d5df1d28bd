"""A database of its own on a Citus cluster, for the tests marked `citus`.

The cluster's coordinator comes from INFRAGRAPH_TEST_CITUS_URL (any Citus 12+ cluster
whose nodes trust the test's user: docs/scaling.md, Tests); unset, those tests are
skipped. A database is made on every node (the coordinator and the workers it lists),
the extension created in each and the workers added; then dropped on every node.
"""

import contextlib
import os
import uuid
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx
import pytest
from starlette.applications import Starlette

from app import citus, db
from app.config import Settings
from app.server import create_app

CITUS_URL = "INFRAGRAPH_TEST_CITUS_URL"
BOOT = "citus-boot-secret"  # the app's bootstrap admin token: never open, tokens or not


def citus_url() -> str:
    """The coordinator's URL, else the test is skipped (saying why)."""
    url = os.environ.get(CITUS_URL)
    if not url:
        pytest.skip(
            f"{CITUS_URL} is unset: no Citus cluster to run on "
            "(docs/scaling.md, Tests, says how to start one)"
        )
    return url


def _at(url: str, *, database: str, host: str | None = None, port: int | None = None) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc
    if host is not None:
        auth = netloc.rpartition("@")[0]
        netloc = f"{auth + '@' if auth else ''}{host}:{port}"
    return urlunsplit((parts.scheme, netloc, f"/{database}", parts.query, parts.fragment))


@contextlib.asynccontextmanager
async def cluster_database(url: str, *, extension: bool = True) -> AsyncIterator[str]:
    """A fresh database on every node of the cluster at `url`; on the coordinator, with
    `extension`, Citus set up (the extension, the workers added); without, a plain
    database (a single node to convert: the workers' databases are ready for it)."""
    # unreachable while set: the test fails (it is meant to run)
    admin = await asyncpg.connect(url, timeout=10)
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 5432
    workers = await _workers(admin)
    assert workers, f"the cluster at {url} has no workers (cluster.sh up adds them)"
    name = f"infragraph_citus_{uuid.uuid4().hex[:12]}"
    nodes = [_at(url, database="postgres", host=h, port=p) for h, p in workers]
    try:
        for node in nodes:
            await _execute(node, f'CREATE DATABASE "{name}"')
            await _execute(_at(node, database=name), "CREATE EXTENSION citus")
        await admin.execute(f'CREATE DATABASE "{name}"')
        database = _at(url, database=name)
        if extension:
            await add_workers(database, (host, port), workers)
        yield database
    finally:
        for node in nodes:
            await _execute(node, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


async def _execute(url: str, statement: str) -> None:
    """`statement` on its own connection to `url`."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


async def add_workers(
    database: str, coordinator: tuple[str, int], workers: list[tuple[str, int]]
) -> None:
    """The citus extension in `database` on the coordinator, which knows itself and the
    workers (the steps docs/scaling.md gives for a conversion)."""
    conn = await asyncpg.connect(database)
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS citus")
        await conn.execute("SELECT citus_set_coordinator_host($1, $2)", *coordinator)
        for host, port in workers:
            await conn.execute("SELECT citus_add_node($1, $2)", host, port)
    finally:
        await conn.close()


async def join_cluster(database: str, url: str) -> None:
    """Makes `database` (a plain one of the coordinator at `url`) a Citus database: the
    extension, the coordinator and the workers of the cluster known to it."""
    admin = await asyncpg.connect(url, timeout=10)
    try:
        workers = await _workers(admin)
    finally:
        await admin.close()
    parts = urlsplit(url)
    await add_workers(database, (parts.hostname or "127.0.0.1", parts.port or 5432), workers)


async def _workers(admin: asyncpg.Connection) -> list[tuple[str, int]]:
    records = await admin.fetch(
        "SELECT nodename, nodeport FROM pg_dist_node WHERE groupid <> 0 AND noderole = 'primary'"
    )
    return [(r["nodename"], r["nodeport"]) for r in records]


@contextlib.asynccontextmanager
async def serving(database_url: str) -> AsyncIterator[tuple[Starlette, httpx.AsyncClient]]:
    """The app on `database_url` (migrated by its start: distributed on a cluster), and an
    admin client of it. Writes over 64 KiB take the streamed path."""
    application = create_app(
        Settings(api_tokens={BOOT: "boot"}, large_write_bytes=64 * 1024),
        database_url=database_url,
    )
    async with (
        application.router.lifespan_context(application),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=application),
            base_url="http://test",
            headers={"Authorization": f"Bearer {BOOT}", "Content-Type": "application/json"},
            timeout=60,
        ) as client,
    ):
        yield application, client


@contextlib.asynccontextmanager
async def distributed_until(until: int) -> AsyncIterator[asyncpg.Connection]:
    """A connection (the app's codecs) to a fresh cluster database migrated up to
    migration `until` and distributed: a cluster as it was before the migrations after
    it, to convert."""
    async with cluster_database(citus_url()) as database:
        pool = await db.create_pool(database, min_size=1, max_size=1)
        try:
            async with pool.acquire() as conn:
                await db.migrate(conn, until=until)
                await citus.distribute(conn)
                yield conn
        finally:
            await pool.close()
