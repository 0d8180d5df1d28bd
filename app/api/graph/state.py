"""A state: its lock, versions, events and links to other states."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from uuid import UUID

import strawberry
from strawberry import relay
from strawberry.scalars import JSON

from app.api.configuration.types import StateConfiguration
from app.api.context import Info
from app.api.graph import rows
from app.api.graph.inputs import StateKind
from app.api.graph.links import StateLink
from app.api.graph.nodes import load_nodes, parse_id
from app.api.graph.refs import EventRef, StateVersionRef
from app.api.leases.types import StateLeases
from app.api.pagination import DEFAULT_FIRST, AfterArg, Connection, FirstArg, connection, page_args
from app.api.readers.types import StateReaders
from app.graph import events, queries


@strawberry.type
class Lock:
    id: str
    holder: str | None = strawberry.field(description="The token that took it.")
    who: str | None
    operation: str | None
    created: datetime
    info: JSON = strawberry.field(description="The LockInfo the locking client sent.")


@strawberry.type
class State(StateReaders, StateConfiguration, StateLeases, relay.Node):
    id: relay.NodeID[str]
    name: str
    kind: StateKind
    lineage: str | None
    created_at: datetime
    state_id: strawberry.Private[UUID]

    @strawberry.field
    async def lock(self, info: Info) -> Lock | None:
        r = await info.context.graph.lock.load(self.state_id)
        return rows.lock_of(r) if r is not None else None

    @strawberry.field(
        description="Whether the current version is encrypted by OpenTofu (false with none)."
    )
    async def encrypted(self, info: Info) -> bool:
        r = await info.context.graph.current_version.load(self.state_id)
        return r is not None and r["version_encrypted"]

    @strawberry.field(description="The version with the highest serial.")
    async def current_version(self, info: Info) -> StateVersionRef | None:
        r = await info.context.graph.current_version.load(self.state_id)
        return rows.version_of(r, self) if r else None

    @strawberry.field(description="Newest first.")
    async def versions(
        self,
        info: Info,
        first: FirstArg = DEFAULT_FIRST,
        after: AfterArg = None,
    ) -> Connection[StateVersionRef]:
        args = page_args(first, after, queries.VERSION_KEY)
        page = await info.context.graph.versions.load((self.state_id, args))
        return connection(page, [rows.version_of(r, self) for r in page.rows], after=after)

    @strawberry.field
    async def version(self, info: Info, serial: int) -> StateVersionRef | None:
        r = await info.context.graph.version_at.load((self.state_id, serial))
        return rows.version_of(r, self) if r else None

    @strawberry.field(description="Newest first.")
    async def events(
        self,
        info: Info,
        first: FirstArg = DEFAULT_FIRST,
        after: AfterArg = None,
    ) -> Connection[EventRef]:
        args = page_args(first, after, events.EVENT_KEY)
        page = await info.context.graph.events.load((self.name, args))
        return connection(page, [rows.event_of(r) for r in page.rows], after=after)

    @strawberry.field(
        description="Who reads this state: the consumers' terraform_remote_state data sources "
        "(current versions), by consumer then address."
    )
    async def consumers(self, info: Info) -> list[StateLink]:
        return [rows.link_of(r) for r in await info.context.graph.consumers.load(self.state_id)]

    @strawberry.field(
        description="Whom this state reads: its current version's terraform_remote_state data "
        "sources that read states of this server, by address."
    )
    async def producers(self, info: Info) -> list[StateLink]:
        return [rows.link_of(r) for r in await info.context.graph.producers.load(self.state_id)]

    @strawberry.field(description="The current version's outputs that no consumer reads.")
    async def unread_outputs(self, info: Info) -> list[str]:
        version = await info.context.graph.current_version.load(self.state_id)
        if version is None:
            return []
        read = {
            o["name"]
            for r in await info.context.graph.consumers.load(self.state_id)
            for o in r["outputs"]
        }
        outputs = await info.context.graph.outputs.load(version["version_id"])
        return [o["name"] for o in outputs if o["name"] not in read]

    @classmethod
    async def resolve_nodes(  # type: ignore[override]  # one signature for Node's overloads
        cls, *, info: Info, node_ids: Iterable[str], required: bool = False
    ) -> list[State | None]:
        return await load_nodes(info, info.context.graph.state, node_ids, rows.state_of, parse_id)
