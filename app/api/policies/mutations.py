"""The policy mutations, a mixin of the root Mutation (see app/api/schema.py).

Admin only (the rules of app/api/access.py).
"""

import strawberry

from app.api.context import Info
from app.api.policies.types import CreatePolicyInput, Policy, UpdatePolicyInput, policy_of
from app.graph import policies


@strawberry.type
class PolicyMutation:
    @strawberry.mutation(
        description="Save a policy and evaluate it over the current version of every state "
        "it covers (its violations open at once). An invalid condition is BAD_INPUT, with "
        "PostgreSQL's reason (and where it found it)."
    )
    async def create_policy(self, info: Info, input: CreatePolicyInput) -> Policy:
        record = await info.context.with_conn(
            policies.create_policy, input.to_spec(), actor=info.context.actor
        )
        return policy_of(record)

    @strawberry.mutation(
        description="Change a policy's fields. A new condition or scope evaluates it again "
        "over every current version: what no longer holds resolves, what newly holds opens."
    )
    async def update_policy(self, info: Info, input: UpdatePolicyInput) -> Policy:
        record = await info.context.with_conn(
            policies.update_policy, input.name, input.changes(), actor=info.context.actor
        )
        return policy_of(record)

    @strawberry.mutation(description="Delete a policy and its violations; returns it as it was.")
    async def delete_policy(self, info: Info, name: str) -> Policy:
        return policy_of(await info.context.with_conn(policies.delete_policy, name))
