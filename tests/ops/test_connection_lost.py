"""A connection the database closes while work holds it (a stop, a restart, an
administrator's pg_terminate_backend) is an outage the client may retry, wherever the
work was: mid-statement, between two statements, or at its transaction's end."""

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest

from app import db


@pytest.fixture
async def own_pool(database_url: str) -> AsyncIterator[db.Pool]:
    pool = await db.create_pool(database_url, max_size=2)
    yield pool
    await pool.close()


async def _terminated(conn: asyncpg.Connection, database_url: str) -> None:
    """Close `conn`'s session from another one, and return once `conn` has noticed."""
    noticed = asyncio.Event()
    conn.add_termination_listener(lambda _: noticed.set())  # run after asyncpg's cleanup
    other = await asyncpg.connect(database_url)
    try:
        await other.execute("SELECT pg_terminate_backend($1)", conn.get_server_pid())
    finally:
        await other.close()
    await asyncio.wait_for(noticed.wait(), 30)


@pytest.mark.parametrize("then", ["a statement", "the commit"])
async def test_a_connection_closed_between_statements_is_unavailable(
    own_pool: db.Pool, database_url: str, then: str
) -> None:
    with pytest.raises(db.ConnectionLost) as raised:
        async with own_pool.acquire() as conn, conn.transaction():
            await conn.execute("CREATE TEMPORARY TABLE t (n int)")
            await _terminated(conn, database_url)
            if then == "a statement":
                await conn.execute("INSERT INTO t VALUES (1)")
    found = db.expected(raised.value)
    assert found is not None and (found.code, found.status) == ("UNAVAILABLE", 503)
    async with own_pool.acquire() as conn:  # the pool goes on without a restart
        assert await conn.fetchval("SELECT 1") == 1


async def test_a_connection_used_after_its_block_is_still_a_bug(own_pool: db.Pool) -> None:
    async with own_pool.acquire() as conn:
        pass
    with pytest.raises(asyncpg.InterfaceError) as raised:
        await conn.fetchval("SELECT 1")
    assert db.expected(raised.value) is None
