"""A live server (real HTTP, real PostgreSQL) with auth on, and clients of it."""

from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest

from tests.helpers.backend import MAX_STATE_BYTES, TOKENS, http_client
from tests.helpers.live_server import LiveServer, server_fixture

server = server_fixture(
    {
        "INFRAGRAPH_API_TOKENS": ",".join(f"{name}:{token}" for name, token in TOKENS.items()),
        "INFRAGRAPH_MAX_STATE_BYTES": str(MAX_STATE_BYTES),
    }
)


@pytest.fixture
async def client(server: LiveServer, conn: asyncpg.Connection) -> AsyncIterator[httpx.AsyncClient]:
    """A client authenticated as `tf`, on an emptied database."""
    async with http_client(server, ("tf", TOKENS["tf"])) as c:
        yield c
