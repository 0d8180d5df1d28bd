"""The Lease type, and State's `locks` and `leases` (a mixin of State)."""

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, cast
from urllib.parse import quote
from uuid import UUID

import strawberry
from strawberry.scalars import JSON

from app.api.context import Info
from app.leases.store import Lease as LeaseRow

if TYPE_CHECKING:
    from app.api.graph.state import Lock


@strawberry.type(
    description="A resource-scoped lock taken from a Terraform plan: its footprint (what "
    "the plan changes) is the holder's until it is released, its Terraform unlocks it, or "
    "it expires."
)
class Lease:
    id: strawberry.ID
    state: str
    holder: str = strawberry.field(description="The token that took it.")
    base_serial: int = strawberry.field(description="The version the plan was made from.")
    addresses: list[str] = strawberry.field(description="The instances the plan changes.")
    outputs: list[str] = strawberry.field(description="The outputs the plan changes.")
    ttl_seconds: int = strawberry.field(description="Each request under it renews it so long.")
    expires_at: datetime
    lock_id: str | None = strawberry.field(
        description="The ID of the lock its Terraform holds (apply running), if any."
    )
    writes: int = strawberry.field(description="How many writes were merged under it.")
    created_at: datetime
    env: JSON = strawberry.field(
        description="The environment a CI job exports before `terraform apply tfplan`: the "
        "http backend's addresses under this lease (the backend block must leave them unset)."
    )


def lease_env(base_url: str, state: str, lease_id: str) -> dict[str, Any]:
    address = f"{base_url.rstrip('/')}/states/{quote(state, safe='/')}"
    return {
        "TF_HTTP_ADDRESS": f"{address}?lease={lease_id}",
        "TF_HTTP_LOCK_ADDRESS": f"{address}/lock?lease={lease_id}",
        "TF_HTTP_UNLOCK_ADDRESS": f"{address}/lock?lease={lease_id}",
        "TF_HTTP_LOCK_METHOD": "LOCK",
        "TF_HTTP_UNLOCK_METHOD": "UNLOCK",
    }


def base_url(info: Info) -> str:
    """The server's URL as clients reach it: the first public URL, else the request's."""
    public = info.context.settings.public_urls
    if public:
        server = public[0]
        return f"{server.scheme}://{server.host}:{server.port}{server.prefix}"
    return str(info.context.request.base_url).rstrip("/")


def lease_of(row: LeaseRow, url: str) -> Lease:
    return Lease(
        id=strawberry.ID(str(row.id)),
        state=row.state_name,
        holder=row.holder,
        base_serial=row.base_serial,
        addresses=list(row.addresses),
        outputs=list(row.outputs),
        ttl_seconds=row.ttl_seconds,
        expires_at=row.expires_at,
        lock_id=row.lock_id,
        writes=row.writes,
        created_at=row.created_at,
        env=cast(JSON, lease_env(url, row.state_name, str(row.id))),
    )


@strawberry.type
class StateLeases:
    """A mixin of State: every lock held, and its live leases."""

    state_id: strawberry.Private[UUID]

    @strawberry.field(
        description="Every lock held: the writer's (whole state) first, then the plans' "
        "(shared: plans never wait)."
    )
    async def locks(
        self, info: Info
    ) -> list[Annotated["Lock", strawberry.lazy("app.api.graph.state")]]:
        from app.api.graph import rows  # the graph's types import this module

        return [rows.lock_of(r) for r in await info.context.graph.locks.load(self.state_id)]

    @strawberry.field(description="Its live leases, oldest first.")
    async def leases(self, info: Info) -> list[Lease]:
        found = await info.context.graph.leases.load(self.state_id)
        url = base_url(info)
        return [lease_of(row, url) for row in found]
