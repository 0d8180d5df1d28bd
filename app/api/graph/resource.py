"""A resource instance of a version: its attributes, edges, history and blast radius."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Iterable
from typing import Any
from uuid import UUID

import strawberry
from strawberry import relay
from strawberry.scalars import JSON

from app.api.configuration.types import ResourceReferences
from app.api.context import Info
from app.api.graph import lists, rows
from app.api.graph.blast import BlastRadiusConnection
from app.api.graph.columns import ResourceColumns, ResourceRow, blast_arguments, row_field
from app.api.graph.history import HistoryEntry
from app.api.graph.inputs import CrossStatesArg, Direction, MaxDepthArg, ResourceMode
from app.api.graph.nodes import load_nodes, parse_resource_id
from app.api.graph.refs import StateRef, StateVersionRef
from app.api.pagination import DEFAULT_FIRST, AfterArg, Connection, FirstArg, connection, page_args
from app.api.runtime.prefetch import resolve
from app.graph import edges, resources
from app.graph import history as graph_history


@strawberry.type(description="One resource instance of a state version.")
class Resource(ResourceReferences, ResourceColumns, relay.Node):
    id: relay.NodeID[str]
    address: str = row_field()
    mode: ResourceMode = row_field()
    type: str = row_field()
    name: str = row_field()
    provider: str = row_field()
    module: str | None = row_field("The module path; null in the root module.")
    index_key: JSON | None = row_field("count index (Int) or for_each key.")
    each: str | None = row_field()
    deposed: str | None = row_field()
    status: str | None = row_field()
    sensitive_attributes: JSON | None = row_field("The attribute paths Terraform marks sensitive.")
    state: StateRef
    version: StateVersionRef
    resource_id: strawberry.Private[UUID]
    row: strawberry.Private[ResourceRow]
    prefetched: strawberry.Private[dict[Hashable, Any]] = dataclasses.field(default_factory=dict)

    @strawberry.field(
        description="The attributes, or the value at `path` (keys; list indexes as strings). "
        "Sensitive values are null."
    )
    def attributes(self, info: Info, path: list[str] | None = None) -> JSON | None:
        if not self.row.has("attributes"):
            # an awaitable of the value (graphql-core awaits what resolvers return)
            return self._load_attributes(info, path)  # type: ignore[return-value]
        value: JSON | None = resources.attribute_value(
            self.row.column("attributes"), self.sensitive_attributes, path or ()
        )
        return value

    async def _load_attributes(self, info: Info, path: list[str] | None) -> Any:
        loaded = await info.context.graph.attributes.load((self.resource_id, self.state.state_id))
        return resources.attribute_value(loaded, self.sensitive_attributes, path or ())

    @strawberry.field(
        description="What it depends on, by address. `direct`: only the edges no other "
        "path implies (Terraform writes dependencies transitively closed)."
    )
    def dependencies(
        self,
        info: Info,
        first: FirstArg = DEFAULT_FIRST,
        after: AfterArg = None,
        direct: bool = False,
    ) -> Connection[Resource]:
        arguments = {"first": first, "after": after, "direct": direct}
        # the connection, or an awaitable of it (graphql-core awaits what resolvers return)
        return resolve(  # type: ignore[no-any-return]
            info, self, lists.RESOURCE_LISTS["dependencies"], arguments, lists.RESOURCE_LISTS
        )

    @strawberry.field(
        description="What depends on it, by address. `direct`: only the edges no other "
        "path implies (Terraform writes dependencies transitively closed)."
    )
    def dependents(
        self,
        info: Info,
        first: FirstArg = DEFAULT_FIRST,
        after: AfterArg = None,
        direct: bool = False,
    ) -> Connection[Resource]:
        arguments = {"first": first, "after": after, "direct": direct}
        # the connection, or an awaitable of it (graphql-core awaits what resolvers return)
        return resolve(  # type: ignore[no-any-return]
            info, self, lists.RESOURCE_LISTS["dependents"], arguments, lists.RESOURCE_LISTS
        )

    @strawberry.field(
        description="The versions in which this address changed, up to this resource's "
        "version, newest first: created, changed (which attributes and fields), removed."
    )
    async def history(
        self, info: Info, first: FirstArg = DEFAULT_FIRST, after: AfterArg = None
    ) -> Connection[HistoryEntry]:
        args = page_args(first, after, graph_history.HISTORY_KEY)
        page = await info.context.graph.history.load((self.key, args))
        return connection(page, [HistoryEntry.of(e) for e in page.rows], after=after)

    @strawberry.field(
        description="Every resource that depends on this one, transitively through the "
        "declared dependencies (DEPENDENTS), or that it depends on (DEPENDENCIES), once, "
        "at its shortest depth over direct edges (those no other path implies), by depth "
        "then address. The whole radius unless `maxDepth`, which says what it left out."
    )
    def blast_radius(
        self,
        info: Info,
        direction: Direction = edges.Direction.DEPENDENTS,
        max_depth: MaxDepthArg = None,
        first: FirstArg = DEFAULT_FIRST,
        after: AfterArg = None,
        cross_states: CrossStatesArg = False,
    ) -> BlastRadiusConnection:
        arguments = blast_arguments(direction, max_depth, first, after, cross_states)
        # the connection, or an awaitable of it (graphql-core awaits what resolvers return)
        return resolve(  # type: ignore[no-any-return]
            info, self, lists.RESOURCE_LISTS["blastRadius"], arguments, lists.RESOURCE_LISTS
        )

    @classmethod
    async def resolve_nodes(  # type: ignore[override]  # one signature for Node's overloads
        cls, *, info: Info, node_ids: Iterable[str], required: bool = False
    ) -> list[Resource | None]:
        return await load_nodes(
            info, info.context.graph.resource, node_ids, rows.resource_of, parse_resource_id
        )

    @property
    def key(self) -> resources.ResourceKey:
        return (self.resource_id, self.version.version_id)


@strawberry.type
class InventoryEntry:
    key: str = strawberry.field(
        description='The group: a type, provider, state or module ("" root).'
    )
    count: int
