"""A live server (real HTTP, real PostgreSQL) with auth on, and clients of it."""

from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest

from tests.helpers.live_server import LiveServer, server_fixture

TOKENS = {"tf": "tf-secret", "ci": "ci-secret"}
MAX_STATE_BYTES = 12 * 1024 * 1024  # above the 8 MiB GET slices, so big states stream

server = server_fixture(
    {
        "INFRAGRAPH_API_TOKENS": ",".join(f"{name}:{token}" for name, token in TOKENS.items()),
        "INFRAGRAPH_MAX_STATE_BYTES": str(MAX_STATE_BYTES),
    }
)


def http_client(server: LiveServer, auth: tuple[str, str] | None) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=server.url,
        auth=auth,
        headers={"Content-Type": "application/json"},  # what Terraform sends
        timeout=120,
        limits=httpx.Limits(max_connections=100, max_keepalive_connections=100),
    )


@pytest.fixture
async def client(server: LiveServer, conn: asyncpg.Connection) -> AsyncIterator[httpx.AsyncClient]:
    """A client authenticated as `tf`, on an emptied database."""
    async with http_client(server, ("tf", TOKENS["tf"])) as c:
        yield c
