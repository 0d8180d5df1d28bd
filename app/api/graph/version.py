"""A state version: its resources, outputs and diff."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from uuid import UUID

import strawberry
from strawberry import relay
from strawberry.scalars import JSON

from app.api.context import Info
from app.api.graph import lists, rows
from app.api.graph.history import VersionDiff
from app.api.graph.inputs import ResourceFilter, graph_filter
from app.api.graph.links import StateLink
from app.api.graph.loaders import Filtered
from app.api.graph.nodes import load_nodes, parse_id
from app.api.graph.refs import ResourceRef, StateRef
from app.api.pagination import DEFAULT_FIRST, AfterArg, Connection, FirstArg, page_args
from app.graph import resources


@strawberry.type
class Output:
    name: str
    value: JSON | None = strawberry.field(description="Null when sensitive.")
    type: JSON | None
    sensitive: bool
    state_id: strawberry.Private[UUID]
    version_id: strawberry.Private[UUID]

    @strawberry.field(
        description="The resource instances of its version its value came from (inferred: "
        "the value, or a string inside it, is the value of their attribute at `path`; only "
        "values of 10 characters or more, held by few instances)."
    )
    async def sources(self, info: Info) -> list[OutputSource]:
        records = await info.context.graph.output_sources.load(self.version_id)
        mine = [r for r in records if r["output_name"] == self.name]
        return [
            OutputSource(resource=resource, path=r["path"], inferred=True)
            for r, resource in zip(mine, rows.resources_of(mine), strict=True)
        ]

    @strawberry.field(
        description="The consumers' data sources (their current versions) that read this "
        "output of the state through terraform_remote_state."
    )
    async def readers(self, info: Info) -> list[StateLink]:
        records = await info.context.graph.consumers.load(self.state_id)
        return [
            rows.link_of(r) for r in records if any(o["name"] == self.name for o in r["outputs"])
        ]


@strawberry.type(description="Where an output's value came from.")
class OutputSource:
    resource: ResourceRef
    path: list[str] = strawberry.field(
        description="The attribute holding the value, as `Resource.attributes(path:)` takes it."
    )
    inferred: bool = strawberry.field(
        description="Always true: found by value, Terraform does not record it."
    )


@strawberry.type
class StateVersion(relay.Node):
    id: relay.NodeID[str]
    serial: int
    lineage: str
    terraform_version: str | None
    created_at: datetime
    created_by: str
    encrypted: bool = strawberry.field(
        description="Encrypted by OpenTofu on the client: stored and served as written, "
        "with no resources or outputs (the server cannot read it)."
    )
    state: StateRef
    version_id: strawberry.Private[UUID]

    @strawberry.field(description="By address.")
    async def resources(
        self,
        info: Info,
        first: FirstArg = DEFAULT_FIRST,
        after: AfterArg = None,
        filter: ResourceFilter | None = None,
    ) -> Connection[ResourceRef]:
        args = Filtered(graph_filter(filter), page_args(first, after, resources.RESOURCE_KEY))
        page = await info.context.graph.resources.load((self.version_id, args))
        return await lists.prefetch_resources(info, page, after)

    @strawberry.field(description="In document order.")
    async def outputs(self, info: Info) -> list[Output]:
        records = await info.context.graph.outputs.load(self.version_id)
        return [rows.output_of(r, self) for r in records]

    @strawberry.field
    async def resource_count(self, info: Info) -> int:
        count: int = await info.context.graph.resource_count.load(self.version_id)
        return count

    @strawberry.field(description="What changed from version `against` (a serial) to this one.")
    async def diff(self, info: Info, against: int) -> VersionDiff:
        return VersionDiff.of(await info.context.graph.diff.load((self.version_id, against)))

    @classmethod
    async def resolve_nodes(  # type: ignore[override]  # one signature for Node's overloads
        cls, *, info: Info, node_ids: Iterable[str], required: bool = False
    ) -> list[StateVersion | None]:
        return await load_nodes(
            info, info.context.graph.version, node_ids, rows.version_of, parse_id
        )
