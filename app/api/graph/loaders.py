"""The graph's dataloaders, one set per request."""

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg
from strawberry.dataloader import DataLoader

from app.api.loaders import by_key, paged
from app.api.pagination import PageArgs
from app.config import Settings
from app.graph import diff, edges, events, queries, resources
from app.graph.edges import Direction, WalkLimits
from app.graph.resources import ResourceFilter, ResourceKey


@dataclass(frozen=True)
class Blast:
    direction: Direction
    max_depth: int
    page: PageArgs
    rows: bool  # False: the total alone (no edges or pageInfo selected)


@dataclass(frozen=True)
class Hop:
    direction: Direction
    page: PageArgs


@dataclass(frozen=True)
class Filtered:
    filter: ResourceFilter
    page: PageArgs


@dataclass
class GraphLoaders:
    state: DataLoader[UUID, Any]
    version: DataLoader[UUID, Any]
    resource: DataLoader[ResourceKey, Any]
    event: DataLoader[UUID, Any]
    current_version: DataLoader[UUID, Any]
    version_at: DataLoader[tuple[UUID, int], Any]
    lock: DataLoader[UUID, Any]
    outputs: DataLoader[UUID, Any]
    resource_count: DataLoader[UUID, Any]
    diff: DataLoader[tuple[UUID, int], Any]
    versions: DataLoader[tuple[UUID, PageArgs], Any]  # of a state
    events: DataLoader[tuple[str, PageArgs], Any]  # of a state name
    resources: DataLoader[tuple[UUID, Filtered], Any]  # of a version
    neighbours: DataLoader[tuple[ResourceKey, Hop], Any]
    blast_radius: DataLoader[tuple[ResourceKey, Blast], Any]

    @classmethod
    def create(cls, pool: asyncpg.Pool, settings: Settings) -> "GraphLoaders":
        walks = WalkLimits(settings.blast_cache_rows, settings.blast_cache_seconds)
        return cls(
            state=by_key(pool, queries.states_by_ids),
            version=by_key(pool, queries.versions_by_ids),
            resource=by_key(pool, resources.resources_by_keys),
            event=by_key(pool, events.events_by_ids),
            current_version=by_key(pool, queries.current_versions),
            version_at=by_key(pool, queries.versions_at),
            lock=by_key(pool, queries.locks_of),
            outputs=by_key(pool, queries.outputs_of, default=[]),
            resource_count=by_key(pool, queries.resource_counts, default=0),
            diff=by_key(pool, diff.diff_versions),
            versions=paged(
                pool,
                lambda conn, ids, a: queries.versions_of(conn, ids, first=a.first, after=a.after),
            ),
            events=paged(
                pool,
                lambda conn, names, a: events.list_events(
                    conn, names, first=a.first, after=a.after
                ),
            ),
            resources=paged(
                pool,
                lambda conn, ids, a: resources.version_resources(
                    conn, ids, a.filter, first=a.page.first, after=a.page.after
                ),
            ),
            neighbours=paged(
                pool,
                lambda conn, ids, a: edges.neighbours(
                    conn, ids, a.direction, first=a.page.first, after=a.page.after
                ),
            ),
            blast_radius=paged(
                pool,
                lambda conn, ids, a: edges.blast_radius(
                    conn,
                    ids,
                    a.direction,
                    limits=walks,
                    max_depth=a.max_depth,
                    first=a.page.first,
                    after=a.page.after,
                    rows=a.rows,
                ),
            ),
        )
