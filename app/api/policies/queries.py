"""The policy root query fields, a mixin of the root Query (see app/api/schema.py)."""

import strawberry

from app.api.context import Info
from app.api.pagination import DEFAULT_FIRST, AfterArg, Connection, FirstArg, connection, page_args
from app.api.policies.types import Policy, Violation, policy_of, violation_of
from app.graph import policies


@strawberry.type
class PolicyQuery:
    @strawberry.field(description="Policies by name.")
    async def policies(
        self, info: Info, first: FirstArg = DEFAULT_FIRST, after: AfterArg = None
    ) -> Connection[Policy]:
        args = page_args(first, after, policies.POLICY_KEY)
        page = await info.context.with_conn(
            policies.list_policies, first=args.first, after=args.after
        )
        return connection(page, [policy_of(r) for r in page.rows], after=after)

    @strawberry.field(
        description="Policy violations by state name, address, policy name and first serial: "
        "of one state and/or one policy; open ones (default), resolved ones (open: false) or "
        "all (open: null)."
    )
    async def violations(
        self,
        info: Info,
        state: str | None = None,
        policy: str | None = None,
        open: bool | None = True,
        first: FirstArg = DEFAULT_FIRST,
        after: AfterArg = None,
    ) -> Connection[Violation]:
        args = page_args(first, after, policies.VIOLATION_KEY)
        page = await info.context.with_conn(
            policies.list_violations,
            state=state,
            policy=policy,
            open=open,
            first=args.first,
            after=args.after,
            readable=info.context.principal.patterns,
        )
        return connection(page, [violation_of(r) for r in page.rows], after=after)
