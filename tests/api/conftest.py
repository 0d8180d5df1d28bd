"""The app in-process (httpx over ASGI, lifespan entered: the real pool), and a GraphQL client."""

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import asyncpg
import httpx
import pytest
from starlette.applications import Starlette

from app import db, tokens
from app.access import Role
from app.config import Settings
from app.server import create_app


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


MakeToken = Callable[..., Awaitable[str]]
BOOT = "boot-secret"  # the closed app's bootstrap admin token


@pytest.fixture(scope="module")
async def closed_app(database_url: str) -> AsyncIterator[Starlette]:
    """The app with a bootstrap token (so never open), for tests of who sees what."""
    application = create_app(Settings(api_tokens={BOOT: "boot"}), database_url=database_url)
    async with application.router.lifespan_context(application):
        yield application


@contextlib.asynccontextmanager
async def as_token(
    app: Starlette, secret: str, headers: dict[str, str] | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """A client of `app` carrying the token `secret` (Bearer)."""
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://test",
        headers={"Authorization": f"Bearer {secret}", **(headers or {})},
    ) as client:
        yield client


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


async def post(
    client: httpx.AsyncClient, query: str, variables: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The GraphQL response body (HTTP 200 required: errors travel in the body)."""
    response = await client.post("/graphql", json={"query": query, "variables": variables or {}})
    assert response.status_code == 200, response.text
    return response.json()


async def gql(
    client: httpx.AsyncClient, query: str, variables: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The data of a query that must succeed."""
    body = await post(client, query, variables)
    assert "errors" not in body, body["errors"]
    return body["data"]


async def error_codes(
    client: httpx.AsyncClient, query: str, variables: dict[str, Any] | None = None
) -> list[str]:
    body = await post(client, query, variables)
    assert body.get("errors"), body
    return [error["extensions"]["code"] for error in body["errors"]]


# asyncpg's own statements: type introspection the first time a connection meets a
# type (with the JIT switched off around it). Not the app's SQL, and not repeatable.
_ASYNCPG_INTERNAL = (
    "WITH RECURSIVE typeinfo_tree",
    "SELECT current_setting('jit')",
    "SELECT set_config('jit'",
)


class CountingPool:
    """Stands in for the app's pool and records every statement the app runs through it."""

    def __init__(self, pool: db.Pool) -> None:
        self.pool = pool
        self.statements: list[str] = []

    def _log(self, query: asyncpg.connection.LoggedQuery) -> None:
        if not " ".join(query.query.split()).startswith(_ASYNCPG_INTERNAL):
            self.statements.append(query.query)

    @contextlib.asynccontextmanager
    async def acquire(self) -> AsyncIterator[asyncpg.Connection]:
        async with self.pool.acquire() as conn:
            conn.add_query_logger(self._log)
            try:
                yield conn
            finally:
                conn.remove_query_logger(self._log)


@pytest.fixture
def statements(app: Starlette) -> Iterator[CountingPool]:
    """Count the SQL statements the app runs during the test."""
    counting = CountingPool(app.state.pool)
    app.state.pool = counting
    try:
        yield counting
    finally:
        app.state.pool = counting.pool
