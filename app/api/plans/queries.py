"""The plans root query fields, a mixin of the root Query (see app/api/schema.py)."""

import strawberry

from app.api.context import Info
from app.api.plans.types import TerraformPlan, plan_id
from app.plans import store


@strawberry.type
class PlansQuery:
    @strawberry.field(description="A state's Terraform plans, newest first.")
    async def plans(self, info: Info, state: str, first: int = 20) -> list[TerraformPlan]:
        rows = await info.context.with_conn(
            store.list_plans,
            state,
            limit=max(0, min(first, 100)),
            readable=info.context.principal.patterns,
        )
        return [TerraformPlan.of(r) for r in rows]

    @strawberry.field(description="A Terraform plan by id.")
    async def terraform_plan(self, info: Info, id: strawberry.ID) -> TerraformPlan:
        row = await info.context.with_conn(
            store.get_plan, plan_id(id), readable=info.context.principal.patterns
        )
        return TerraformPlan.of(row)
