"""Per-request dataloaders: every key asked for in one tick is fetched by one statement.

A loader lives for one request (built on first use through the request's context),
so its cache never serves another request's data.
"""

from collections.abc import Awaitable, Callable, Hashable, Mapping
from typing import Any, TypeVar

import asyncpg
from strawberry.dataloader import DataLoader

from app import db
from app.errors import AppError
from app.paging import EMPTY, Page

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
A = TypeVar("A", bound=Hashable)


def by_key(
    pool: db.Pool,
    fetch: Callable[[asyncpg.Connection, list[K]], Awaitable[Mapping[K, V]]],
    default: Any = None,
) -> DataLoader[K, Any]:
    """Loads values by key (`default` for a key `fetch` did not return)."""

    async def load(keys: list[K]) -> list[Any]:
        async with db.connection(pool) as conn:
            found = await fetch(conn, keys)
        return [found.get(key, default) for key in keys]

    return DataLoader(load)


def paged(
    pool: db.Pool,
    fetch: Callable[[asyncpg.Connection, list[Any], A], Awaitable[Mapping[Any, Page[Any]]]],
) -> DataLoader[tuple[Any, A], Page[Any]]:
    """Loads one page per (owner, args) key; the owners sharing args share a statement.

    An expected error (bad args) fails the keys with those args, not the batch.
    """

    async def load(keys: list[tuple[Any, A]]) -> list[Page[Any] | AppError]:
        groups: dict[A, list[Any]] = {}
        for owner, args in keys:
            groups.setdefault(args, []).append(owner)
        results: dict[A, Mapping[Any, Page[Any]] | AppError] = {}
        async with db.connection(pool) as conn:
            for args, owners in groups.items():
                try:
                    results[args] = await fetch(conn, owners, args)
                except AppError as error:
                    results[args] = error
        return [_page(results[args], owner) for owner, args in keys]

    return DataLoader(load)


def _page(result: Mapping[Any, Page[Any]] | AppError, owner: Any) -> Page[Any] | AppError:
    return result if isinstance(result, AppError) else result.get(owner, EMPTY)
