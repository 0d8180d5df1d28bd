"""The graph's mutations, a mixin of the root Mutation (see app/api/schema.py)."""

import strawberry
from strawberry.scalars import JSON

from app.api.context import Info
from app.graph import store


@strawberry.type
class GraphMutation:
    @strawberry.mutation(
        description="A state (current, or at `serial`) rendered from its normalized rows as a "
        "Terraform v4 document; recorded as an export event."
    )
    async def export_state(self, info: Info, name: str, serial: int | None = None) -> JSON:
        return await info.context.with_conn(
            store.export_state, name, serial=serial, actor=info.context.actor
        )
