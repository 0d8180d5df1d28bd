"""A server killed (SIGKILL) in the middle of a big POST: the previous version stays
current and intact, and nothing of the interrupted write is left behind."""

import asyncio
import hashlib
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest

from app.graph.raw import PIECE_BYTES
from tests.helpers.backend import http_client, versions
from tests.helpers.live_server import LiveServer, live_server
from tests.helpers.states import BUILTIN, resource, state
from tests.helpers.waiting import wait_until

NAME = "crash/state"
URL = f"/states/{NAME}"
OPEN = {"INFRAGRAPH_API_TOKENS": None}
INSTANCES = 2000


def big_state(serial: int, value: str) -> bytes:
    """Bigger than one GET slice, with many rows to write: items, each depending on the blob."""
    filler = value * (PIECE_BYTES // len(value) + 1)
    return state(
        [
            resource(
                "terraform_data",
                "item",
                attributes={"input": value},
                provider=BUILTIN,
                keys=list(range(INSTANCES)),
                depends_on=["terraform_data.blob"],
            ),
            resource("terraform_data", "blob", attributes={"input": filler}, provider=BUILTIN),
        ],
        serial=serial,
        outputs={"value": {"value": value, "type": "string"}},
    )


async def _poll(conn: asyncpg.Connection, query: str, *args: object, gone: bool = False) -> object:
    """The first value `query` returns (or, with `gone`, wait until it returns none)."""

    async def answered() -> tuple[object] | None:
        value = await conn.fetchval(query, *args)
        return (value,) if (value is None) == gone else None

    [value] = await wait_until(answered, f"{query} {'to return none' if gone else 'to answer'}")
    return value


async def _assert_intact(database_url: str, conn: asyncpg.Connection, body: bytes) -> None:
    assert await versions(conn, NAME) == [1]
    assert await conn.fetchval("SELECT count(*) FROM resources") == INSTANCES + 1
    # no half-closed ranges: every row of the one version is still open
    for table in ("resources", "resource_dependencies", "outputs"):
        closed = f"SELECT count(*) FROM {table} WHERE serial_to IS NOT NULL"
        assert await conn.fetchval(closed) == 0, table
    with live_server(database_url, OPEN) as server:
        async with http_client(server, None) as client:
            got = await client.get(URL)
        assert not server.server_errors()
    assert got.status_code == 200
    assert hashlib.md5(got.content).digest() == hashlib.md5(body).digest()


async def _post_first(server: LiveServer, body: bytes) -> None:
    async with http_client(server, None) as client:
        assert (await client.post(URL, content=body)).status_code == 200


@pytest.mark.slow
async def test_killed_while_writing_the_rows(database_url, pool, conn) -> None:
    first, second = big_state(1, "first"), big_state(2, "second")
    with live_server(database_url, OPEN) as server:
        await _post_first(server, first)
        async with (
            http_client(server, None) as client,
            pool.acquire() as blocker,
        ):
            async with blocker.transaction():
                # the second write gets past its version and resource rows, then waits here
                # (closing the first version's edges, or copying its own)
                await blocker.execute("LOCK TABLE resource_dependencies IN EXCLUSIVE MODE")
                post = asyncio.create_task(client.post(URL, content=second))
                writer = await _poll(
                    conn,
                    """SELECT pid FROM pg_stat_activity WHERE datname = current_database()
                       AND wait_event_type = 'Lock' AND query LIKE '%resource_dependencies%'""",
                )
                server.kill()
                with pytest.raises(httpx.TransportError):
                    await post
                assert not server.server_errors()
            # lock released: the orphaned session finds its client gone and rolls back
            await _poll(conn, "SELECT 1 FROM pg_stat_activity WHERE pid = $1", writer, gone=True)
    await _assert_intact(database_url, conn, first)


@pytest.mark.slow
async def test_killed_while_receiving_the_body(database_url, conn) -> None:
    first, second = big_state(1, "first"), big_state(2, "second")
    with live_server(database_url, OPEN) as server:
        await _post_first(server, first)
        address = urlsplit(server.url)
        _, writer = await asyncio.open_connection(address.hostname, address.port)
        head = f"POST {URL} HTTP/1.1\r\nHost: test\r\nContent-Length: {len(second)}\r\n\r\n"
        writer.write(head.encode() + second[: len(second) // 2])
        await writer.drain()
        server.kill()
        writer.close()
        assert not server.server_errors()
    await _assert_intact(database_url, conn, first)
