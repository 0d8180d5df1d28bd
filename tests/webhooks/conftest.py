"""Webhook tests run servers on a database of their own: the session's in-process apps
(tests/conftest.py) run delivery workers too, with settings that refuse loopback
receivers, and would take these tests' deliveries."""

from collections.abc import AsyncIterator, Iterator

import asyncpg
import pytest

from app import db
from tests.helpers.databases import truncate_all
from tests.helpers.live_server import LiveServer
from tests.helpers.webhook_receiver import Receiver, receiving
from tests.helpers.webhooks import delete_webhooks


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


@pytest.fixture
def receiver(server: LiveServer) -> Iterator[Receiver]:
    """A receiver on loopback for one test; the module's webhooks are deleted after it."""
    with receiving() as running:
        yield running
    delete_webhooks(server.url)
