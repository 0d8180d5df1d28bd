"""Test base: a throwaway PostgreSQL database per test session, and the app in-process
(httpx over ASGI, lifespan entered: the real pool) for the API, dashboard and ops tests.

With DATABASE_URL set (CI, this machine's cluster), a fresh database is
created on that server and dropped at the end. Without it, an embedded
PostgreSQL (pgserver) starts in a temporary directory.
"""

import compileall
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest
from hypothesis import HealthCheck, settings
from starlette.applications import Starlette

from app import db, tokens
from app.access import Role
from app.config import Settings
from app.server import create_app
from tests.helpers.app import BOOT, CountingPool, MakeToken
from tests.helpers.databases import throwaway_database, truncate_all

# Generation time and the time an example takes are the machine's load, not the code's:
# on a busy machine they would fail tests whose inputs and answers are right.
settings.register_profile("infragraph", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("infragraph")


def pytest_sessionstart(session: pytest.Session) -> None:
    # The tests start hundreds of server and CLI processes: each imports app/ compiled,
    # even where PYTHONDONTWRITEBYTECODE keeps the interpreter from caching it.
    compileall.compile_dir(Path(__file__).resolve().parent.parent / "app", quiet=1)


@pytest.fixture(scope="session")
def admin_url() -> Iterator[str]:
    if url := os.environ.get("DATABASE_URL"):
        yield url
        return
    pgserver = db.import_pgserver()
    with tempfile.TemporaryDirectory(prefix="infragraph-pg-") as home:
        server = pgserver.get_server(Path(home), cleanup_mode="delete")
        yield server.get_uri()
        server.cleanup()


@pytest.fixture(scope="session")
async def database_url(admin_url: str) -> AsyncIterator[str]:
    """A fresh, migrated database for this test session."""
    async with throwaway_database(admin_url) as url:
        yield url


@pytest.fixture(scope="module")
async def own_database(admin_url: str) -> AsyncIterator[str]:
    """A fresh, migrated database for one test module: for servers whose tokens would
    close the session's open servers (a server that has had a token never reopens)."""
    async with throwaway_database(admin_url) as url:
        yield url


@pytest.fixture(scope="session")
async def pool(database_url: str) -> AsyncIterator[db.Pool]:
    pool = await db.create_pool(database_url, min_size=1, max_size=8)
    yield pool
    await pool.close()


@pytest.fixture
async def conn(pool: db.Pool) -> AsyncIterator[asyncpg.Connection]:
    """A connection to an emptied database."""
    async with pool.acquire() as connection:
        await truncate_all(connection)
        yield connection


@pytest.fixture(scope="session")
async def app(database_url: str) -> AsyncIterator[Starlette]:
    application = create_app(Settings(), database_url=database_url)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(app: Starlette, conn: asyncpg.Connection) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app, on an emptied database (`conn` writes the test's states)."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://test", headers={"Content-Type": "application/json"}
    ) as c:
        yield c


@pytest.fixture(scope="module")
async def closed_app(database_url: str) -> AsyncIterator[Starlette]:
    """The app with a bootstrap token (so never open), for tests of who sees what."""
    application = create_app(Settings(api_tokens={BOOT: "boot"}), database_url=database_url)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def db_token(conn: asyncpg.Connection) -> AsyncIterator[MakeToken]:
    """Makes database tokens (app/tokens.py), deleted after the test: a token left
    behind would close the open app of the next test (TokenCache.is_closed)."""

    async def make(
        name: str,
        role: Role = Role.READ,
        *,
        states: list[str] | None = None,
        scopes: list[str] | None = None,
        expires_days: float | None = None,
    ) -> str:
        _, secret = await tokens.create_token(
            conn,
            name,
            role,
            state_globs=states or [],
            scopes=scopes or [],
            expires_days=expires_days,
            created_by="test",
        )
        return secret

    yield make
    await conn.execute("DELETE FROM api_tokens")


@pytest.fixture
def statements(app: Starlette) -> Iterator[CountingPool]:
    """Count the SQL statements the app runs during the test."""
    counting = CountingPool(app.state.pool)
    app.state.pool = counting
    try:
        yield counting
    finally:
        app.state.pool = counting.pool
