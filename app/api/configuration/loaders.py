"""The configuration graph's per-request loaders: one statement per field per request,
whatever the number of states or resources asking."""

from functools import cached_property, partial
from typing import Any
from uuid import UUID

import asyncpg
from strawberry.dataloader import DataLoader

from app import db
from app.api.loaders import by_key
from app.configuration import edges, store
from app.graph.resources import ResourceKey

MAX_FIRST = 1000  # a list's length at most


class ConfigurationLoaders:
    """Each loader is built on first use within the request."""

    def __init__(self, pool: db.Pool) -> None:
        self.pool = pool

    @cached_property
    def modules(self) -> DataLoader[UUID, Any]:
        return by_key(self.pool, store.state_modules, default=[])

    def versions(self, limit: int) -> DataLoader[UUID, Any]:
        return self._versions[limit]

    @cached_property
    def _versions(self) -> dict[int, DataLoader[UUID, Any]]:
        return _Cached(lambda limit: by_key(self.pool, partial(_versions, limit=limit)))

    def references(self, referenced_by: bool, limit: int) -> DataLoader[ResourceKey, Any]:
        return self._references[(referenced_by, limit)]

    @cached_property
    def _references(self) -> dict[tuple[bool, int], DataLoader[ResourceKey, Any]]:
        return _Cached(
            lambda key: by_key(
                self.pool, partial(_references, referenced_by=key[0], limit=key[1]), default=[]
            )
        )


class _Cached(dict[Any, Any]):
    """A loader per argument value, made on first use."""

    def __init__(self, make: Any) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, key: Any) -> Any:
        self[key] = value = self.make(key)
        return value


async def _versions(
    conn: asyncpg.Connection, state_ids: list[UUID], *, limit: int
) -> dict[UUID, Any]:
    return await store.configuration_versions(conn, state_ids, limit=limit)


async def _references(
    conn: asyncpg.Connection, keys: list[ResourceKey], *, referenced_by: bool, limit: int
) -> dict[ResourceKey, Any]:
    return await edges.reasoned_edges(conn, keys, referenced_by=referenced_by, limit=limit)
