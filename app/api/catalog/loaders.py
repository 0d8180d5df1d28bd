"""The catalog's dataloaders, one set per request: lists hanging off scopes and tables,
resources by ID, and record pages, each batch one statement per kind."""

from collections.abc import Iterable
from functools import cached_property
from typing import Any

import asyncpg
from strawberry.dataloader import DataLoader

from app import db
from app.api.loaders import by_key, paged
from app.api.pagination import PageArgs
from app.catalog import records, resources

# (kind, ID): a parent's ID for `children`, the resource's own for `by_id`
KindKey = tuple[str, str]


def _by_kind(keys: Iterable[KindKey]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for kind, resource_id in keys:
        groups.setdefault(kind, []).append(resource_id)
    return groups


async def _children(conn: asyncpg.Connection, keys: list[KindKey]) -> dict[KindKey, Any]:
    found: dict[KindKey, Any] = {}
    for kind, parents in _by_kind(keys).items():
        rows = await resources.children(conn, kind, parents)
        found.update({(kind, parent): rows[parent] for parent in parents})
    return found


async def _by_id(conn: asyncpg.Connection, keys: list[KindKey]) -> dict[KindKey, Any]:
    found: dict[KindKey, Any] = {}
    for kind, ids in _by_kind(keys).items():
        rows = await resources.by_ids(conn, kind, ids)
        found.update({(kind, i): rows[i] for i in ids if i in rows})
    return found


class CatalogLoaders:
    """Each loader is built on first use within the request."""

    def __init__(self, pool: db.Pool) -> None:
        self.pool = pool

    @cached_property
    def children(self) -> DataLoader[KindKey, Any]:
        """List of dicts, creation order."""
        return by_key(self.pool, _children, default=[])

    @cached_property
    def by_id(self) -> DataLoader[KindKey, Any]:
        """Dict or None."""
        return by_key(self.pool, _by_id)

    @cached_property
    def records(self) -> DataLoader[tuple[str, PageArgs], Any]:
        """Of a table."""
        return paged(
            self.pool,
            lambda conn, ids, a: records.records_of(conn, ids, first=a.first, after=a.after),
        )
