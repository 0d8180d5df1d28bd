"""The graph's mutations, a mixin of the root Mutation (see app/api/schema.py)."""

import dataclasses
from typing import cast

import strawberry
from strawberry.scalars import JSON

from app.api.context import Info
from app.graph import readback, retention


@strawberry.type(description="What a prune removed from one state.")
class PrunedState:
    state: str
    serials: list[int] = strawberry.field(description="The versions removed, ascending.")
    resources: int = strawberry.field(description="Resource rows no remaining version held.")
    edges: int
    outputs: int
    chunks: int = strawberry.field(description="Raw-byte chunks no remaining version used.")


@strawberry.type
class GraphMutation:
    @strawberry.mutation(
        description="Delete old versions of the states whose names match the glob `states` "
        "(`team/*`: `*` any run, `/` too; `?` one character): each keeps its last "
        "`keepLast` (>= 1: never the current one) and those younger than `keepDays`; "
        "recorded as a prune event per state."
    )
    async def prune(
        self, info: Info, states: str, keep_last: int, keep_days: float | None = None
    ) -> list[PrunedState]:
        pruned = await info.context.with_conn(
            retention.prune,
            state_glob=states,
            keep_last=keep_last,
            keep_days=keep_days,
            actor=info.context.actor,
        )
        return [PrunedState(**dataclasses.asdict(p)) for p in pruned]

    @strawberry.mutation(
        description="A state (current, or at `serial`) rendered from its normalized rows as a "
        "Terraform v4 document; recorded as an export event."
    )
    async def export_state(self, info: Info, name: str, serial: int | None = None) -> JSON:
        exported = await info.context.with_conn(
            readback.export_state, name, serial=serial, actor=info.context.actor
        )
        # strawberry's JSON is a NewType of object: the document serves as it is
        return cast(JSON, exported)
