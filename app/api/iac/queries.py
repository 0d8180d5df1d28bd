"""The IaC root query fields, a mixin of the root Query (see app/api/schema.py)."""

import strawberry

from app.api.catalog.types import build_all
from app.api.context import Info
from app.api.iac.types import IacStateRow
from app.iac import service


@strawberry.type
class IacQuery:
    @strawberry.field(
        description="The IaC state of a scope (its slug): which live resource each ref of "
        "`system` (or of every system) names. Identity and time only."
    )
    async def iac_state(
        self, info: Info, scope: str, system: str | None = None
    ) -> list[IacStateRow]:
        return build_all(IacStateRow, await info.context.with_conn(service.state, scope, system))

    @strawberry.field(
        description="A JSONL document of `system`'s resources in a scope (its slug), with refs "
        "for the unmanaged ones; it plans cleanly. Writes nothing."
    )
    async def export(self, info: Info, scope: str, system: str) -> str:
        document = await info.context.with_conn(service.export, scope, system)
        return document.decode()
