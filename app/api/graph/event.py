"""The audit trail's GraphQL type."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import strawberry
from strawberry import relay
from strawberry.scalars import JSON

from app.api.context import Info
from app.api.graph import rows
from app.api.graph.nodes import load_nodes, parse_id


@strawberry.type
class Event(relay.Node):
    id: relay.NodeID[str]
    state_name: str
    action: str
    actor: str
    serial: int | None
    detail: JSON
    created_at: datetime

    @classmethod
    async def resolve_nodes(  # type: ignore[override]  # one signature for Node's overloads
        cls, *, info: Info, node_ids: Iterable[str], required: bool = False
    ) -> list[Event | None]:
        return await load_nodes(info, info.context.graph.event, node_ids, rows.event_of, parse_id)
