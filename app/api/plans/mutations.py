"""submitPlan, a mixin of the root Mutation (see app/api/schema.py)."""

import strawberry
from strawberry.scalars import JSON

from app.api.context import Info
from app.api.plans.types import TerraformPlan
from app.configuration.parse import configuration_of
from app.configuration.store import PLAN, record_configuration
from app.plans.parse import parse_plan
from app.plans.store import submit_plan


@strawberry.type
class PlansMutation:
    @strawberry.mutation(
        description="Read a Terraform plan (`terraform show -json`) against the state's "
        "current version and store it (a read of the state suffices)."
    )
    async def submit_plan(self, info: Info, state: str, plan: JSON) -> TerraformPlan:
        parsed = parse_plan(plan)
        configuration = configuration_of(plan)
        row = await info.context.with_conn(submit_plan, state, parsed, submitter=info.context.actor)
        if configuration is not None and info.context.principal.may_plan(state):
            await info.context.with_conn(
                record_configuration,
                state,
                configuration,
                origin=PLAN,
                submitter=info.context.actor,
            )
        return TerraformPlan.of(row)
