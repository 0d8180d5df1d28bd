"""The delivery worker: one per server process, sharing the outbox with the others.

It claims due deliveries (app/webhooks/store.py: the oldest pending one of each webhook
and state, FOR UPDATE SKIP LOCKED, leased for longer than an attempt can take), POSTs
them concurrently, and records each answer: a 2xx is delivered; anything else (another
status, no answer in time, a refused destination) is retried after a delay that doubles
from retry_min_s up to retry_max_s with jitter, until retry_for_s after it was queued;
then it is dead and its webhook failing. A process that dies mid-send leaves its
claims to expire: they are sent again (at least once; a receiver deduplicates by the
delivery id). It wakes when a delivery is queued (NOTIFY on store.CHANNEL, its own
listening connection) and every poll_s regardless; on the same beat it records locks
held too long as `lock-held` events.
"""

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import asyncpg
import httpx
from prometheus_client import Counter

from app import db
from app.errors import AppError
from app.observe import REGISTRY, UNEXPECTED
from app.webhooks import store
from app.webhooks.destination import UnsafeDestination, resolve
from app.webhooks.kinds import kind_of
from app.webhooks.payload import event_document, render
from app.webhooks.settings import WebhookSettings
from app.webhooks.signing import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    signature,
)

if TYPE_CHECKING:
    from app.config import Settings
    from app.tfstate.remote import Server

log = logging.getLogger("infragraph.webhooks")
# httpx logs every request at INFO: a line per delivery, which the metrics count instead
logging.getLogger("httpx").setLevel(logging.WARNING)

MAX_SENDING = 16  # deliveries being sent at once by one process
MAX_RESPONSE_BYTES = 64 * 1024  # of a receiver's answer read (then the connection closes)
BACKOFF_MAX_S = 30.0  # between tries while the database is out of reach
APPLICATION_NAME = "infragraph webhooks"
USER_AGENT = "infragraph-webhooks"

DELIVERIES = Counter(
    "infragraph_webhook_deliveries",
    "Webhook delivery attempts of this process, by outcome (delivered, failed: to be "
    "retried, dead: given up).",
    ["outcome"],
    registry=REGISTRY,
)


def retry_delay(attempts: int, settings: WebhookSettings, rng: random.Random) -> float:
    """Seconds before the next try after `attempts` failed ones: doubling from
    retry_min_s, capped at retry_max_s, the second half of it random (pure)."""
    base = min(settings.retry_max_s, settings.retry_min_s * 2.0 ** min(attempts - 1, 60))
    return base / 2 + rng.random() * base / 2


@dataclass(frozen=True)
class Ended:
    """An attempt that is over: the claimed row, the receiver's status, why it failed."""

    row: Any
    status: int | None
    error: str | None  # None: delivered


class Worker:
    def __init__(
        self,
        pool: db.Pool,
        database_url: str,
        settings: WebhookSettings,
        *,
        base_url: str = "",
    ) -> None:
        self.pool = pool
        self.database_url = database_url
        self.settings = settings
        self.base_url = base_url  # the server's public URL, for dashboard links
        self.rng = random.Random()
        self.wake = asyncio.Event()
        self.sending: set[asyncio.Task[None]] = set()
        self.ended: list[Ended] = []  # attempts over, not yet recorded
        self.http = httpx.AsyncClient(
            follow_redirects=False,
            trust_env=False,  # a proxy would connect elsewhere than the address checked
            timeout=httpx.Timeout(settings.timeout_s),
            limits=httpx.Limits(max_connections=MAX_SENDING, max_keepalive_connections=MAX_SENDING),
            headers={"User-Agent": USER_AGENT},
        )

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator["Worker"]:
        tasks = [
            asyncio.create_task(self._run(), name="webhook worker"),
            asyncio.create_task(self._listen(), name="webhook listener"),
        ]
        try:
            yield self
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await self.http.aclose()

    # --- the loop --------------------------------------------------------------------

    async def _run(self) -> None:
        pause = self.settings.poll_s
        synced = False
        checked_locks = 0.0
        try:
            while True:
                try:
                    async with db.connection(self.pool) as conn:
                        # one table, one statement: with no webhook the worker touches
                        # no other table (nor waits on one a bulk TRUNCATE holds)
                        if self.ended or await store.any_webhook(conn):
                            if not synced:
                                await store.sync_actions(conn)
                                synced = True
                            if time.monotonic() - checked_locks >= self.settings.poll_s:
                                await store.record_held_locks(conn, self.settings.lock_held_s)
                                checked_locks = time.monotonic()
                            await self._record(conn)
                            await self._claim(conn)
                    pause = self.settings.poll_s
                except db.ERROR_TYPES as exc:
                    if db.expected(exc) is None:
                        UNEXPECTED.inc()
                        log.exception("webhook worker: unexpected database error (a bug)")
                    else:
                        log.warning("webhook worker: %s: %s; trying again", type(exc).__name__, exc)
                    pause = min(pause * 2, BACKOFF_MAX_S)
                except Exception:  # a bug: logged, and the worker goes on
                    UNEXPECTED.inc()
                    log.exception("webhook worker: unexpected error (a bug)")
                    pause = min(pause * 2, BACKOFF_MAX_S)
                # woken by a notification, an attempt that ended, or the clock
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), pause)
                self.wake.clear()
        finally:  # what is being sent is sent again when its claim expires
            for task in self.sending:
                task.cancel()
            await asyncio.gather(*self.sending, return_exceptions=True)

    async def _claim(self, conn: asyncpg.Connection) -> None:
        """Claim what is due, up to MAX_SENDING at once, and start sending it: each
        attempt runs on its own, so a slow receiver holds up nobody else's."""
        room = MAX_SENDING - len(self.sending)
        if room <= 0:
            return
        for row in await store.claim(conn, room, self.settings.lease_s):
            task = asyncio.create_task(self._attempt(row), name="webhook delivery")
            self.sending.add(task)
            task.add_done_callback(self._ended)

    def _ended(self, task: "asyncio.Task[None]") -> None:
        self.sending.discard(task)
        self.wake.set()  # record it, and claim what it held back (the state's next)

    async def _attempt(self, row: Any) -> None:
        try:
            status, error = await self._send(row)
        except AppError as exc:  # a secret sealed under a key this server does not have
            status, error = None, exc.message
        except Exception as exc:  # a bug: recorded as a failed attempt, retried later
            UNEXPECTED.inc()
            log.exception("webhook worker: unexpected error sending %s (a bug)", row["id"])
            status, error = None, f"unexpected error: {type(exc).__name__}"
        self.ended.append(Ended(row, status, error))

    async def _record(self, conn: asyncpg.Connection) -> None:
        """Record the attempts that ended: the delivered in one statement, each failure
        (retried later, or dead) in its own transaction. What is not recorded when the
        database fails stays, for the next time."""
        ended, self.ended = self.ended, []
        try:
            delivered = [e for e in ended if e.error is None]
            if delivered:
                await store.record_delivered(
                    conn, [e.row["id"] for e in delivered], [e.status or 0 for e in delivered]
                )
                DELIVERIES.labels("delivered").inc(len(delivered))
            ended = [e for e in ended if e.error is not None]
            while ended:
                await self._record_failure(conn, ended[0])
                ended.pop(0)
        except BaseException:
            self.ended = ended + self.ended
            raise

    async def _record_failure(self, conn: asyncpg.Connection, ended: "Ended") -> None:
        row, error = ended.row, ended.error or ""
        delay = retry_delay(row["attempts"], self.settings, self.rng)
        failure = store.Failure(row["id"], ended.status, error, delay)
        outcome = await store.record_failed(conn, failure, self.settings.retry_for_s)
        DELIVERIES.labels("dead" if outcome == "dead" else "failed").inc()
        if outcome == "dead":
            log.warning(
                "webhook %s: delivery %s is dead after %d attempts: %s",
                row["url"],
                row["id"],
                row["attempts"],
                error,
            )

    # --- one attempt -----------------------------------------------------------------

    def _body(self, row: Any) -> tuple[bytes, str, int]:
        """The body, the kind's name and the time it is sent at."""
        sent_at = int(time.time())
        kind = kind_of(row["action"])
        event = {**dict(row), "id": row["event_id"]}
        document = event_document(
            delivery=str(row["id"]),
            event=event,
            kind=kind.value if kind is not None else row["action"],
            base_url=self.base_url,
            sent_at=sent_at,
        )
        return render(document, row["format"]), document["kind"], sent_at

    async def _send(self, row: Any) -> tuple[int | None, str | None]:
        """(the receiver's status, None) when it took it, else (status or None, why not)."""
        try:
            body, kind, sent_at = self._body(row)
            secret = store.open_secret(row["webhook_id"], row["secret"])
            destination = await resolve(row["url"], self.settings)
            target = destination.target
            headers = {
                "Host": target.netloc,
                "Content-Type": "application/json",
                SIGNATURE_HEADER: signature(secret, body),
                DELIVERY_HEADER: str(row["id"]),
                TIMESTAMP_HEADER: str(sent_at),
                EVENT_HEADER: kind,
            }
            # TLS is checked against the name, over the connection to the address checked
            extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
            async with asyncio.timeout(self.settings.timeout_s):
                request = self.http.build_request(
                    "POST",
                    destination.request_url,
                    content=body,
                    headers=headers,
                    extensions=extensions,
                )
                response = await self.http.send(request, stream=True)
                try:
                    read = 0
                    async for chunk in response.aiter_raw():
                        read += len(chunk)
                        if read > MAX_RESPONSE_BYTES:
                            break
                finally:
                    await response.aclose()
        except UnsafeDestination as exc:
            return None, exc.message
        except TimeoutError:
            return None, f"no answer within {self.settings.timeout_s:g} s"
        except httpx.HTTPError as exc:
            return None, f"{type(exc).__name__}: {exc}"
        status = response.status_code
        if 200 <= status < 300:
            return status, None
        return status, f"HTTP {status}"

    # --- waking up -------------------------------------------------------------------

    async def _listen(self) -> None:
        """Wake the loop on every notification; reconnect after a pause when lost (the
        loop polls meanwhile)."""
        pause = 1.0
        while True:
            try:
                conn = await asyncpg.connect(
                    self.database_url, server_settings={"application_name": APPLICATION_NAME}
                )
            except db.ERROR_TYPES:
                await asyncio.sleep(pause)
                pause = min(pause * 2, BACKOFF_MAX_S)
                continue
            lost = asyncio.Event()
            try:
                conn.add_termination_listener(lambda _, lost=lost: lost.set())
                await conn.add_listener(store.CHANNEL, lambda *_: self.wake.set())
                pause = 1.0
                self.wake.set()  # what was queued while not listening
                while not lost.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(lost.wait(), 30.0)
                    if not lost.is_set():
                        await conn.execute("SELECT 1", timeout=5.0)
            except db.ERROR_TYPES:
                pass
            finally:
                conn.terminate()
            await asyncio.sleep(pause)
            pause = min(pause * 2, BACKOFF_MAX_S)


def base_url(servers: "Sequence[Server]") -> str:
    """The first public URL of the server (INFRAGRAPH_PUBLIC_URLS); "": links are paths."""
    if not servers:
        return ""
    first = servers[0]
    return f"{first.scheme}://{first.host}:{first.port}{first.prefix}"


def worker_running(
    pool: db.Pool, database_url: str, settings: "Settings"
) -> AbstractAsyncContextManager[Any]:
    """The process's worker for the block (none with INFRAGRAPH_WEBHOOK_WORKER=0)."""
    if not settings.webhooks.worker:
        return contextlib.nullcontext()
    worker = Worker(pool, database_url, settings.webhooks, base_url=base_url(settings.public_urls))
    return worker.running()
