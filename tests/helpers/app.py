"""The app in-process: clients carrying a token, its bootstrap admin's secret, and a pool
that counts the statements the app runs (the fixtures of tests/conftest.py use these)."""

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import asyncpg
import httpx
from starlette.applications import Starlette

MakeToken = Callable[..., Awaitable[str]]
BOOT = "boot-secret"  # the closed app's bootstrap admin token


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


# asyncpg's own statements: type introspection the first time a connection meets a
# type (with the JIT switched off around it). Not the app's SQL, and not repeatable.
_ASYNCPG_INTERNAL = (
    "WITH RECURSIVE typeinfo_tree",
    "SELECT current_setting('jit')",
    "SELECT set_config('jit'",
)


class CountingPool:
    """Stands in for the app's pool and records every statement the app runs through it."""

    def __init__(self, pool: asyncpg.Pool) -> None:
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
