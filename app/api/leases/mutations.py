"""acquireLease and releaseLease, a mixin of the root Mutation (see app/api/schema.py)."""

import strawberry
from strawberry.scalars import JSON

from app.api.context import Info
from app.api.leases.types import Lease, base_url, lease_of
from app.leases import store
from app.leases.backend import lease_id_of
from app.plans.parse import parse_plan


@strawberry.type
class LeasesMutation:
    @strawberry.mutation(
        description="Lease what a Terraform plan (`terraform show -json tfplan`) changes of "
        "`state`: refused with LEASE_CONFLICT while another live lease holds part of it or "
        "the state is locked whole, with STALE_PLAN when the plan was not made from the "
        "current version (`serial`: the one it was made from, when known). Write role."
    )
    async def acquire_lease(
        self,
        info: Info,
        state: str,
        plan: JSON,
        ttl_seconds: int = 3600,
        serial: int | None = None,
    ) -> Lease:
        parsed = parse_plan(plan)
        row = await info.context.with_conn(
            store.acquire,
            state,
            parsed,
            who=info.context.principal,
            ttl_seconds=ttl_seconds,
            serial=serial,
        )
        return lease_of(row, base_url(info))

    @strawberry.mutation(
        description="End a lease: its holder, or an admin (recorded as a force-release)."
    )
    async def release_lease(self, info: Info, id: strawberry.ID) -> Lease:
        row = await info.context.with_conn(
            store.release, lease_id_of(str(id)), who=info.context.principal
        )
        return lease_of(row, base_url(info))
