"""Waiting on conditions, never on clocks: poll a predicate until it holds.

A test that sleeps and then asserts is slow on a quiet machine and flaky on a busy
one; these return as soon as the condition holds and fail, naming it, only after a
generous timeout.
"""

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg

T = TypeVar("T")

TIMEOUT_S = 60.0
INTERVAL_S = 0.02


async def wait_until(
    predicate: Callable[[], Awaitable[T] | T],
    what: str,
    *,
    within: float = TIMEOUT_S,
    interval: float = INTERVAL_S,
) -> T:
    """The first truthy value of `predicate` (a function or a coroutine function), polled
    every `interval` seconds; TimeoutError naming `what` after `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {within} s for {what}")
        await asyncio.sleep(interval)


def wait_until_sync(
    predicate: Callable[[], T],
    what: str,
    *,
    within: float = TIMEOUT_S,
    interval: float = INTERVAL_S,
) -> T:
    """wait_until for code without an event loop."""
    deadline = time.monotonic() + within
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {within} s for {what}")
        time.sleep(interval)
    return value


async def lock_waits(conn: asyncpg.Connection) -> set[str]:
    """The lock kinds backends of this database wait on now (pg_stat_activity's
    wait_event: `transactionid`, `advisory`, `relation`, ...)."""
    await conn.execute("SELECT pg_stat_clear_snapshot()")  # a transaction keeps one
    waiting = await conn.fetchval(
        """SELECT array_agg(wait_event) FROM pg_stat_activity
           WHERE wait_event_type = 'Lock' AND datname = current_database()"""
    )
    return set(waiting or ())


async def until_waiting_on(conn: asyncpg.Connection, events: set[str]) -> None:
    """Until backends wait on each of these lock kinds."""

    async def waiting() -> bool:
        return events <= await lock_waits(conn)

    await wait_until(waiting, f"a backend waiting on {sorted(events)}")
