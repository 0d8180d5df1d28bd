"""The IaC GraphQL types, built from the service's plan dataclasses and state views.

Actions, kinds and reasons are strings holding the lowercase words of iac.md ("create",
"column", "drift"), the same words the CLI prints, rather than GraphQL enums.
"""

from collections.abc import Mapping

import strawberry
from strawberry.scalars import JSON

from app.api.context import Info
from app.api.graph.rows import version_of
from app.api.graph.version import StateVersion
from app.api.policies.types import PolicyFinding
from app.graph import queries
from app.iac import plan as iac_plan
from app.iac import service


@strawberry.type(description="How many actions of each kind a plan holds.")
class PlanSummary:
    create: int
    update: int
    delete: int
    move: int
    adopt: int
    orphaned: int
    noop: int
    insert: int
    skip: int

    @classmethod
    def of(cls, summary: Mapping[str, int]) -> "PlanSummary":
        return cls(**summary)


@strawberry.type(description="One field of a resource under the three-way diff.")
class FieldChange:
    field: str
    desired: JSON | None = strawberry.field(description="What the document declares.")
    last_applied: JSON | None = strawberry.field(description="What the last apply set.")
    live: JSON | None = strawberry.field(description="What the resource holds now.")
    reason: str = strawberry.field(
        description="intent (desired differs from last applied), drift (live differs from "
        "last applied), both, create or delete."
    )


@strawberry.type(description="What apply would do to one declared resource or record.")
class PlanAction:
    action: str = strawberry.field(
        description="create, update, delete, move, adopt, orphaned, noop, insert or skip."
    )
    kind: str = strawberry.field(description='One of the ten resource kinds, or "record".')
    ref: str = strawberry.field(description="The qualified ref, e.g. contacts.email.")
    reason: str
    line: int | None = strawberry.field(description="The document line; null for none.")
    changes: list[FieldChange]


@strawberry.type(description="A reviewed plan: apply it by its hash.")
class Plan:
    hash: str = strawberry.field(description="Pass it to apply; a changed world makes it stale.")
    system: str
    summary: PlanSummary
    actions: list[PlanAction]
    warnings: list[str]
    violations: list[PolicyFinding] = strawberry.field(
        description="The policy violations applying it would open; one of an enforced policy "
        "makes the apply refuse (POLICY_VIOLATION)."
    )

    @classmethod
    def of(cls, plan: iac_plan.Plan) -> "Plan":
        return cls(
            hash=plan.hash,
            system=plan.system,
            summary=PlanSummary.of(plan.summary),
            actions=[
                PlanAction(
                    action=a.action,
                    kind=a.kind,
                    ref=a.ref,
                    reason=a.reason,
                    line=a.line,
                    changes=[
                        FieldChange(
                            field=c.field,
                            desired=c.desired,
                            last_applied=c.last_applied,
                            live=c.live,
                            reason=c.reason,
                        )
                        for c in a.changes
                    ],
                )
                for a in plan.actions
            ],
            warnings=list(plan.warnings),
            violations=[PolicyFinding.of(f) for f in plan.violations],
        )


async def _version(info: Info, name: str, serial: int) -> StateVersion:
    state = await info.context.with_conn(queries.state_by_name, name)
    # never None: the apply or release just wrote a version of this state
    assert state is not None
    row = await info.context.graph.version_at.load((state["state_id"], serial))
    return version_of(row)


@strawberry.type(description="An applied plan, recorded as a version of the IaC graph state.")
class ApplyResult:
    state_name: str = strawberry.field(description='"iac:{scope slug}/{system}".')
    summary: PlanSummary
    plan: Plan = strawberry.field(description="The plan that was applied.")
    serial: strawberry.Private[int]

    @strawberry.field(
        description="The state's version after this apply (an apply that changes nothing "
        "writes none: the current one). Follow it to resources, diff, events."
    )
    async def version(self, info: Info) -> StateVersion:
        return await _version(info, self.state_name, self.serial)

    @classmethod
    def of(cls, applied: service.Applied) -> "ApplyResult":
        return cls(
            state_name=applied.state_name,
            summary=PlanSummary.of(applied.summary),
            plan=Plan.of(applied.plan),
            serial=applied.serial,
        )


@strawberry.type(description="What a system let go of; the resources stay live, unmanaged.")
class ReleaseResult:
    state_name: str = strawberry.field(description='"iac:{scope slug}/{system}".')
    released: list[str] = strawberry.field(
        description="The released refs: those given, and the sub-resources of released tables."
    )
    serial: strawberry.Private[int]

    @strawberry.field(description="The state's version recording the release.")
    async def version(self, info: Info) -> StateVersion:
        return await _version(info, self.state_name, self.serial)

    @classmethod
    def of(cls, released: service.Released) -> "ReleaseResult":
        return cls(state_name=released.state_name, released=released.refs, serial=released.serial)


@strawberry.type(description="Which live resource an IaC ref names (identity and time only).")
class IacStateRow:
    system: str
    resource_type: str
    ref: str
    resource_id: strawberry.ID
    table_id: strawberry.ID | None = strawberry.field(
        description="Null for a command or an insight selection."
    )
    updated_at: str = strawberry.field(description='UTC, e.g. "2026-07-19T08:30:00Z".')
