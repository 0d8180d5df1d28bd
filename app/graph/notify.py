"""Events as they are committed, for GraphQL subscriptions: PostgreSQL LISTEN/NOTIFY.

Every insert into `events` notifies CHANNEL with the event's id (a trigger,
migrations/0016_event_notify.sql), delivered at commit: every server on the
database hears every write, whichever server made it, and never a write rolled
back. Each server process holds one listening connection (`EventFeed`, not one
per subscriber); ids that arrive together are read in one query and handed to
every subscriber's bounded queue. A subscriber whose queue is full (it reads
slower than events come) is dropped with `SubscriberTooSlow` rather than let
memory grow. Listeners (`listen`: the server's own, app.token_watch) get every event
first, synchronously, before any subscriber's queue does. A lost connection is
logged and made again after a pause that doubles up to BACKOFF_MAX_S; events
committed meanwhile are not replayed (the `events` query has them).
"""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from uuid import UUID

import asyncpg

from app import db
from app.errors import LimitExceeded
from app.graph.events import events_by_ids
from app.observe import SUBSCRIBERS, UNEXPECTED

log = logging.getLogger("infragraph.events")

CHANNEL = "infragraph_events"  # the trigger's, in migrations/0016_event_notify.sql
APPLICATION_NAME = "infragraph event feed"  # how the connection shows in pg_stat_activity
QUEUE_SIZE = 1000  # events a subscriber may fall behind before it is dropped
BACKOFF_MIN_S = 0.5
BACKOFF_MAX_S = 30.0
# An idle connection is checked this often: a silently dead one sends no notification.
IDLE_CHECK_S = 30.0
CHECK_TIMEOUT_S = 5.0


class SubscriberTooSlow(LimitExceeded):
    pass


class _Subscriber:
    def __init__(self, size: int) -> None:
        # an event row, or None: dropped (the last item it gets)
        self.queue: asyncio.Queue[db.Row | None] = asyncio.Queue(size)

    def offer(self, row: db.Row) -> bool:
        """Queue `row`; False when the queue is full: the subscriber is dropped."""
        try:
            self.queue.put_nowait(row)
        except asyncio.QueueFull:
            while not self.queue.empty():  # what it missed makes the rest worthless
                self.queue.get_nowait()
            self.queue.put_nowait(None)
            return False
        return True

    async def rows(self) -> AsyncIterator[db.Row]:
        while (row := await self.queue.get()) is not None:
            yield row
        raise SubscriberTooSlow(
            f"this subscription fell {self.queue.maxsize} events behind and was dropped; "
            "subscribe again",
            {"max": self.queue.maxsize},
        )


class EventFeed:
    """The events committed on the database at `url`, to any number of subscribers."""

    def __init__(self, url: str, *, queue_size: int = QUEUE_SIZE) -> None:
        self.url = url
        self.queue_size = queue_size
        self.subscribers: set[_Subscriber] = set()
        self.listeners: list[Callable[[db.Row], None]] = []
        self.listening = asyncio.Event()  # set while a connection listens
        self._arrived: list[UUID] = []
        self._wake = asyncio.Event()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator["EventFeed"]:
        """Listen (and reconnect) in the background until the block ends."""
        task = asyncio.create_task(self._run(), name="event feed")
        try:
            yield self
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def listen(self, listener: Callable[[db.Row], None]) -> None:
        """Call `listener` with every event row from now on, before subscribers get it."""
        self.listeners.append(listener)

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[AsyncIterator[db.Row]]:
        """Event rows (events_by_ids' columns) committed from now on, in arrival order."""
        subscriber = _Subscriber(self.queue_size)
        self.subscribers.add(subscriber)
        SUBSCRIBERS.inc()
        try:
            yield subscriber.rows()
        finally:
            self.subscribers.discard(subscriber)
            SUBSCRIBERS.dec()

    async def _run(self) -> None:
        pause = BACKOFF_MIN_S
        lost: BaseException | None = None
        while True:
            try:
                conn = await asyncpg.connect(
                    self.url, server_settings={"application_name": APPLICATION_NAME}
                )
            except db.ERROR_TYPES as exc:
                lost = exc
            else:
                try:
                    await db.init_connection(conn)
                    conn.add_termination_listener(lambda _: self._wake.set())
                    await conn.add_listener(CHANNEL, self._notified)
                    if lost is not None:
                        log.warning("event feed: listening again")
                    pause, lost = BACKOFF_MIN_S, None
                    self.listening.set()
                    await self._deliver(conn)
                except db.ERROR_TYPES as exc:
                    lost = exc
                except Exception as exc:  # a bug: logged, and the feed goes on
                    UNEXPECTED.inc()
                    log.exception("event feed: unexpected error (a bug)")
                    lost = exc
                finally:
                    self.listening.clear()
                    conn.terminate()
            log.warning(
                "event feed: no database connection (%s: %s); reconnecting in %.1f s",
                type(lost).__name__,
                lost,
                pause,
            )
            await asyncio.sleep(pause)
            pause = min(pause * 2, BACKOFF_MAX_S)

    def _notified(self, conn: object, pid: int, channel: str, payload: object) -> None:
        self._arrived.append(UUID(str(payload)))
        self._wake.set()

    async def _deliver(self, conn: asyncpg.Connection) -> None:
        """Read and hand out the events notified, until the connection fails."""
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), IDLE_CHECK_S)
            except TimeoutError:
                await conn.execute("SELECT 1", timeout=CHECK_TIMEOUT_S)
                continue
            self._wake.clear()
            if conn.is_closed():
                raise asyncpg.ConnectionDoesNotExistError("the connection was lost")
            ids, self._arrived = self._arrived, []
            if not ids or not (self.subscribers or self.listeners):  # nobody to tell
                continue
            found = await events_by_ids(conn, ids)
            rows = [found[i] for i in ids if i in found]  # a deleted one is gone
            for listener in self.listeners:
                for row in rows:
                    listener(row)
            for subscriber in list(self.subscribers):
                if not all(subscriber.offer(row) for row in rows):
                    self.subscribers.discard(subscriber)
