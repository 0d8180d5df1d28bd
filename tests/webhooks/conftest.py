"""Webhook tests run servers on a database of their own: the session's in-process apps
(tests/api/conftest.py) run delivery workers too, with settings that refuse loopback
receivers, and would take these tests' deliveries."""

from collections.abc import AsyncIterator

import asyncpg
import pytest

from app import db
from tests.conftest import throwaway_database, truncate_all


@pytest.fixture(scope="module")
async def own_database(admin_url: str) -> AsyncIterator[str]:
    async with throwaway_database(admin_url) as url:
        yield url


@pytest.fixture
async def own_conn(own_database: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection to the module's database, emptied."""
    conn = await asyncpg.connect(own_database)
    try:
        await db.init_connection(conn)
        await truncate_all(conn)
        yield conn
    finally:
        await conn.close()
