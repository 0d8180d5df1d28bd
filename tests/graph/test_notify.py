"""The event feed: committed events reach subscribers, once, in order; rolled-back
ones never; a slow subscriber is dropped; a lost connection is made again."""

import asyncio
import logging
from collections.abc import AsyncIterator

import asyncpg
import pytest

from app import db
from app.access import Principal, Role
from app.graph.events import append_event
from app.graph.locks import lock
from app.graph.notify import APPLICATION_NAME, EventFeed, SubscriberTooSlow
from tests.helpers.backend import lock_info
from tests.helpers.databases import throwaway_database
from tests.helpers.waiting import wait_until

WAIT_S = 10.0


@pytest.fixture
async def feed(database_url: str, conn: asyncpg.Connection) -> AsyncIterator[EventFeed]:
    async with EventFeed(database_url, queue_size=3).running() as running:
        await asyncio.wait_for(running.listening.wait(), WAIT_S)
        yield running


async def _next(rows: AsyncIterator[object]) -> dict[str, object]:
    return dict(await asyncio.wait_for(anext(rows), WAIT_S))  # type: ignore[call-overload]


async def test_committed_events_reach_every_subscriber_in_order(feed, conn) -> None:
    async with feed.subscribe() as first, feed.subscribe() as second:
        async with conn.transaction():
            await append_event(conn, state_name="a", action="write", actor="x", serial=1)
            await append_event(conn, state_name="b", action="prune", actor="y")
        # events written in SQL of its own
        await lock(conn, "c", lock_info("L1"), who=Principal("z", Role.WRITE))
        for rows in (first, second):
            got = [await _next(rows) for _ in range(3)]
            assert [(r["state_name"], r["action"], r["actor"]) for r in got] == [
                ("a", "write", "x"),
                ("b", "prune", "y"),
                ("c", "lock", "z"),
            ]
            assert got[0]["serial"] == 1 and got[2]["detail"] == {
                "id": "L1",
                "who": "alice@laptop",
                "operation": "OperationTypeApply",
                "holder": "z",
            }


async def test_a_rolled_back_event_never_arrives(feed, conn) -> None:
    async with feed.subscribe() as rows:
        transaction = conn.transaction()
        await transaction.start()
        await append_event(conn, state_name="gone", action="write", actor="x")
        await transaction.rollback()
        await append_event(conn, state_name="kept", action="write", actor="x")
        assert (await _next(rows))["state_name"] == "kept"


async def test_a_subscriber_that_falls_behind_is_dropped(feed, conn) -> None:
    async with feed.subscribe() as slow, feed.subscribe() as keeping_up:
        for serial in range(1, 5):  # one more than the queue holds (3)
            await append_event(conn, state_name="a", action="write", actor="x", serial=serial)
            assert (await _next(keeping_up))["serial"] == serial
        with pytest.raises(SubscriberTooSlow, match="fell 3 events behind"):
            await _next(slow)
        assert len(feed.subscribers) == 1  # the slow one's queue is no longer fed


async def test_a_lost_connection_is_made_again_and_logged(admin_url, caplog) -> None:
    """On a database of its own: its feed's is the one connection to cut."""
    caplog.set_level(logging.INFO, "infragraph.events")
    async with (
        throwaway_database(admin_url) as url,
        EventFeed(url).running() as own,
        own.subscribe() as rows,
    ):
        await asyncio.wait_for(own.listening.wait(), WAIT_S)
        conn = await asyncpg.connect(url)
        await db.init_connection(conn)
        try:
            killed = await conn.fetchval(
                """SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                   WHERE application_name = $1 AND datname = current_database()""",
                APPLICATION_NAME,
            )
            assert killed == 1
            await wait_until(
                lambda: "listening again" in caplog.text, "the feed back", within=WAIT_S
            )
            assert "event feed: no database connection" in caplog.text
            assert "event feed: listening again" in caplog.text
            await append_event(conn, state_name="after", action="write", actor="x")
            assert (await _next(rows))["state_name"] == "after"
        finally:
            await conn.close()
