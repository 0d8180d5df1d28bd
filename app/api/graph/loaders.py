"""The graph's dataloaders, one set per request.

A loader's function never refers back to its GraphLoaders (a bound method, a lambda
reading `self`): that cycle would keep a request's loaded rows (a blast radius page:
a thousand records) until the garbage collector finds them, whose passes over them
took a tenth of a page's time, instead of freeing them with the request.
"""

from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any
from uuid import UUID

import asyncpg
from strawberry.dataloader import DataLoader

from app import db
from app.api.loaders import by_key, paged
from app.api.pagination import PageArgs
from app.config import Settings
from app.graph import across, diff, edges, events, history, links, queries, readers, resources
from app.graph.edges import Direction, WalkLimits
from app.graph.resources import ResourceFilter, ResourceKey
from app.leases import shared
from app.leases import store as lease_store


@dataclass(frozen=True)
class Blast:
    direction: Direction
    max_depth: int | None  # None: no limit
    page: PageArgs
    rows: bool  # False: the total alone (no edges or pageInfo selected)
    json: bool = True  # the resources' index keys and sensitive paths (False: not shown)
    attributes: bool = True  # the resources' attributes (False: loaded when asked for)
    cross_states: bool = False  # on through the links between states (app/graph/across.py)


@dataclass(frozen=True)
class Hop:
    direction: Direction
    page: PageArgs
    direct: bool = False


@dataclass(frozen=True)
class Filtered:
    filter: ResourceFilter
    page: PageArgs


class GraphLoaders:
    """Each loader is built on first use within the request (most use one or two)."""

    def __init__(
        self, pool: db.Pool, settings: Settings, readable: list[str] | None = None
    ) -> None:
        self.pool = pool
        self.readable = readable  # the caller's patterns (app.access): links and walks
        self.walks = WalkLimits(settings.blast_cache_rows, settings.blast_cache_seconds)

    @cached_property
    def state(self) -> DataLoader[UUID, Any]:
        return by_key(self.pool, queries.states_by_ids)

    @cached_property
    def version(self) -> DataLoader[UUID, Any]:
        return by_key(self.pool, queries.versions_by_ids)

    @cached_property
    def resource(self) -> DataLoader[ResourceKey, Any]:
        return by_key(self.pool, resources.resources_by_keys)

    @cached_property
    def attributes(self) -> DataLoader[tuple[UUID, UUID], Any]:
        """Of a resource row (row id, state id) read without them."""
        return by_key(self.pool, resources.attributes_of)

    @cached_property
    def event(self) -> DataLoader[UUID, Any]:
        return by_key(self.pool, events.events_by_ids)

    @cached_property
    def current_version(self) -> DataLoader[UUID, Any]:
        return by_key(self.pool, queries.current_versions)

    @cached_property
    def version_at(self) -> DataLoader[tuple[UUID, int], Any]:
        return by_key(self.pool, queries.versions_at)

    @cached_property
    def lock(self) -> DataLoader[UUID, Any]:
        return by_key(self.pool, queries.locks_of)

    @cached_property
    def locks(self) -> DataLoader[UUID, Any]:
        """The writer's lock and the plans' (app/leases/shared.py)."""
        return by_key(self.pool, shared.locks_of, default=[])

    @cached_property
    def leases(self) -> DataLoader[UUID, Any]:
        return by_key(self.pool, lease_store.leases_of, default=[])

    @cached_property
    def output_readers(self) -> DataLoader[UUID, Any]:
        return by_key(self.pool, readers.readers_by_id)

    @cached_property
    def outputs(self) -> DataLoader[UUID, Any]:
        return by_key(self.pool, queries.outputs_of, default=[])

    @cached_property
    def resource_count(self) -> DataLoader[UUID, Any]:
        return by_key(self.pool, queries.resource_counts, default=0)

    @cached_property
    def diff(self) -> DataLoader[tuple[UUID, int], Any]:
        return by_key(self.pool, diff.diff_versions)

    @cached_property
    def versions(self) -> DataLoader[tuple[UUID, PageArgs], Any]:
        """Of a state."""
        return paged(
            self.pool,
            lambda conn, ids, a: queries.versions_of(conn, ids, first=a.first, after=a.after),
        )

    @cached_property
    def events(self) -> DataLoader[tuple[str, PageArgs], Any]:
        """Of a state name."""
        return paged(
            self.pool,
            lambda conn, names, a: events.list_events(conn, names, first=a.first, after=a.after),
        )

    @cached_property
    def resources(self) -> DataLoader[tuple[UUID, Filtered], Any]:
        """Of a version."""
        return paged(
            self.pool,
            lambda conn, ids, a: resources.version_resources(
                conn, ids, a.filter, first=a.page.first, after=a.page.after
            ),
        )

    @cached_property
    def neighbours(self) -> DataLoader[tuple[ResourceKey, Hop], Any]:
        return paged(
            self.pool,
            lambda conn, ids, a: edges.neighbours(
                conn, ids, a.direction, first=a.page.first, after=a.page.after, direct=a.direct
            ),
        )

    @cached_property
    def history(self) -> DataLoader[tuple[ResourceKey, PageArgs], Any]:
        """Of a resource."""
        return paged(
            self.pool,
            lambda conn, keys, a: history.histories(conn, keys, first=a.first, after=a.after),
        )

    @cached_property
    def blast_radius(self) -> DataLoader[tuple[ResourceKey, Blast], Any]:
        return paged(self.pool, partial(_blast_radius, self.walks, self.readable))

    @cached_property
    def output_sources(self) -> DataLoader[UUID, Any]:
        """The output lineage of a version."""
        return by_key(self.pool, resources.output_sources, default=[])

    @cached_property
    def consumers(self) -> DataLoader[UUID, Any]:
        """The links to a producer state."""
        readable = self.readable
        return by_key(
            self.pool, lambda conn, ids: links.links_by_producer(conn, ids, readable), default=[]
        )

    @cached_property
    def producers(self) -> DataLoader[UUID, Any]:
        """The links of a consumer state."""
        readable = self.readable
        return by_key(
            self.pool, lambda conn, ids: links.links_by_consumer(conn, ids, readable), default=[]
        )


async def _blast_radius(
    walks: WalkLimits,
    readable: list[str] | None,
    conn: asyncpg.Connection,
    ids: list[ResourceKey],
    a: Blast,
) -> dict[ResourceKey, Any]:
    if a.cross_states:
        return await across.cross_blast_radius(
            conn,
            ids,
            a.direction,
            max_depth=a.max_depth,
            first=a.page.first,
            after=a.page.after,
            rows=a.rows,
            readable=readable,
        )
    return await edges.blast_radius(
        conn,
        ids,
        a.direction,
        limits=walks,
        max_depth=a.max_depth,
        first=a.page.first,
        after=a.page.after,
        rows=a.rows,
        json=a.json,
        attributes=a.attributes,
    )
