"""The process's tuning: the cyclic garbage collector and glibc's allocator.

Set from the server's lifecycle, never from a route:
- `tune()` when the process starts (app.serving.run, before any thread allocates);
- `collect_when_idle` a task of the app's lifespan (app.server);
- `StateWrites` the middleware app.server puts around the backend's state routes;
- `gc_paused` around code that builds many objects from one document.

The collector. Young generations are collected by count as usual; a full collection
walks every live object (millions while large answers are built), holding the GIL for
seconds, health thread included: it runs when no request is in flight, or at least
every FULL_COLLECTION_S under constant load. A parsed state is millions of objects
that form no cycle: while they live, a collection would walk them for nothing, at a
cost of more than half the parse.

The allocator (a no-op elsewhere than glibc). A big write frees most of what it
allocated as it goes, batch by batch, in worker threads. glibc gives each thread that
allocates its own arena (up to 8 per core), and memory one arena frees is not reused
by a batch running in another; nor is freed memory inside the heap returned to the
system, so the next big write starts from the last one's high-water mark. Measured on
a 100,000-instance import (107.5 MB): two arenas instead of the default took the peak
RSS from 214 to 203 MiB, and trimming after each big write kept five imports in a row
at the peak of one.
"""

import asyncio
import contextlib
import ctypes
import gc
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

GC_THRESHOLDS = (100_000, 50, 1_000_000_000)
FULL_COLLECTION_S = 60.0
_IDLE_CHECK_S = 1.0
_M_ARENA_MAX = -8  # mallopt's parameter
ARENAS = 2


def tune() -> None:
    """The process's settings: at most ARENAS malloc arenas (MALLOC_ARENA_MAX in the
    environment, when set, wins), full collections left to `collect_when_idle`. Call
    first thing, before threads allocate."""
    limit_arenas()
    gc.set_threshold(*GC_THRESHOLDS)


async def collect_when_idle(in_flight: Callable[[], int]) -> None:
    """Full garbage collections at quiet moments (see GC_THRESHOLDS): when `in_flight()`
    requests are 0, or overdue; runs until cancelled."""
    last = time.monotonic()
    while True:
        await asyncio.sleep(_IDLE_CHECK_S)
        overdue = time.monotonic() - last > FULL_COLLECTION_S
        if gc.get_count()[2] and (in_flight() == 0 or overdue):
            gc.collect()
            last = time.monotonic()


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building many objects from one document."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _libc() -> Any:
    return ctypes.CDLL("libc.so.6")


def limit_arenas() -> None:
    """At most ARENAS arenas; MALLOC_ARENA_MAX in the environment, when set, wins. Call
    before threads allocate."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return
    with contextlib.suppress(OSError, AttributeError):
        _libc().mallopt(_M_ARENA_MAX, ARENAS)


def trim() -> None:
    """Return the free memory of every arena to the system (after a big write)."""
    with contextlib.suppress(OSError, AttributeError):
        _libc().malloc_trim(0)


class StateWrites:
    """Around the state routes' POSTs: the cyclic GC off from the moment the whole body
    is received until the write is answered (the parsed state lives that long), and the
    allocator trimmed once no large write (over `large_write_bytes`, or of unknown
    length) is left running."""

    def __init__(self, app: ASGIApp, *, large_write_bytes: int) -> None:
        self.app = app
        self.large_write_bytes = large_write_bytes
        self.large = 0  # large writes running now

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        large = not (declared.isascii() and declared.isdigit()) or (
            int(declared) > self.large_write_bytes
        )
        paused = False

        async def received() -> Message:
            nonlocal paused
            message = await receive()
            body_done = message["type"] == "http.request" and not message.get("more_body")
            if body_done and not paused and gc.isenabled():
                gc.disable()
                paused = True
            return message

        self.large += large
        try:
            await self.app(scope, received, send)
        finally:
            if paused:
                gc.enable()
            self.large -= large
            if large and not self.large:
                trim()
