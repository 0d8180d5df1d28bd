"""A request's share of the connection pool.

One GraphQL request runs its resolvers concurrently: a hundred aliases, each a
statement of its own, would take every connection of the pool at once and leave
other callers waiting. Through its share a request holds at most
`request_connections` at once (its statements queue behind one another, not
behind other requests); and once the cost meter has stopped its answer
(app.api.cost), the statements still queued are not run at all.
"""

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, cast

from app import db
from app.api import cost


class _Share:
    def __init__(self, pool: db.Pool, connections: int) -> None:
        self._pool = pool
        self._slots = asyncio.Semaphore(connections)

    @contextlib.asynccontextmanager
    async def acquire(self) -> AsyncIterator[Any]:
        async with self._slots:
            meter = cost.meter()
            if meter is not None and meter.over:
                raise meter.refusal()  # an AppError: the loader's keys fail with it
            async with self._pool.acquire() as conn:
                yield conn

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)


def share(pool: db.Pool, connections: int) -> db.Pool:
    """`pool` as one request sees it (typed as the pool: `acquire` is what it is used for)."""
    return cast(db.Pool, _Share(pool, connections))
