"""The TerraformPlan type: a stored plan, what it changes, reaches and breaks."""

import enum
from collections.abc import Iterable
from datetime import datetime
from typing import Any
from uuid import UUID

import strawberry
from strawberry import relay
from strawberry.scalars import JSON

from app.api.context import Info
from app.errors import BadInput
from app.plans import impact, markdown, store

MAX_FIRST = 1000


@strawberry.enum
class TerraformAction(enum.Enum):
    CREATE = "CREATE"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    REPLACE = "REPLACE"
    READ = "READ"
    NO_OP = "NO_OP"
    FORGET = "FORGET"


@strawberry.type
class PlannedAttributeChange:
    path: str
    before: JSON | None
    after: JSON | None = strawberry.field(
        description='"(known after apply)" when Terraform knows it only after apply.'
    )
    sensitive: bool


@strawberry.type
class PlannedResourceChange:
    address: str
    action: TerraformAction
    mode: str
    type: str
    previous_address: str | None = strawberry.field(description="Set when the instance moves.")
    moved: bool
    importing: bool
    deposed: str | None
    reason: str | None
    attributes: list[PlannedAttributeChange]
    more_attributes: int


@strawberry.type
class PlannedOutputChange:
    name: str
    action: TerraformAction
    before: JSON | None
    after: JSON | None
    sensitive: bool


@strawberry.type
class PlanImpactMember:
    state: str
    address: str
    depth: int
    path: list[str]
    path_states: list[str]
    via: list[str] = strawberry.field(description="The changed instances that reach it.")


@strawberry.type
class PlanStaleConsumer:
    consumer: str
    address: str = strawberry.field(description="The consumer's terraform_remote_state.")
    output: str
    before: JSON | None
    after: JSON | None
    sensitive: bool


@strawberry.type
class PlanViolation:
    policy: str
    severity: str
    enforce: bool
    address: str
    opened: bool = strawberry.field(description="true: would open; false: would resolve.")


@strawberry.type
class PlanCount:
    action: str
    count: int


def _window(items: list[Any], first: int, after: str | None) -> list[Any]:
    """Items after the cursor (an offset) and at most `first` of them."""
    if not 0 <= first <= MAX_FIRST:
        raise BadInput(f"first must be between 0 and {MAX_FIRST}")
    start = 0
    if after is not None:
        if not after.isdigit() or len(after) > 9:
            raise BadInput(f"invalid cursor {after!r}")
        start = int(after) + 1
    return items[start : start + first]


def _change(c: dict[str, Any]) -> PlannedResourceChange:
    return PlannedResourceChange(
        address=c["address"],
        action=TerraformAction[c["action"]],
        mode=c["mode"],
        type=c["type"],
        previous_address=c["previous_address"],
        moved=c["previous_address"] is not None and c["previous_address"] != c["address"],
        importing=c["importing"],
        deposed=c["deposed"],
        reason=c["reason"],
        attributes=[PlannedAttributeChange(**a) for a in c["attributes"]],
        more_attributes=c["more_attributes"],
    )


@strawberry.type
class TerraformPlan(relay.Node):
    id: relay.NodeID[str]
    row: strawberry.Private[Any]

    @classmethod
    def of(cls, row: Any) -> "TerraformPlan":
        return cls(id=str(row["id"]), row=row)

    @classmethod
    async def resolve_nodes(  # type: ignore[override]  # one signature for Node's overloads
        cls, *, info: Info, node_ids: Iterable[str], required: bool = False
    ) -> list["TerraformPlan | None"]:
        ids = [plan_id(i) for i in node_ids]
        rows = await info.context.with_conn(
            store.plans_by_id, ids, readable=info.context.principal.patterns
        )
        return [cls.of(rows[i]) if i in rows else None for i in ids]

    @strawberry.field
    def state(self) -> str:
        return str(self.row["state_name"])

    @strawberry.field
    def submitter(self) -> str:
        return str(self.row["submitter"])

    @strawberry.field
    def created_at(self) -> datetime:
        value: datetime = self.row["created_at"]
        return value

    @strawberry.field(description="The state's serial when the plan was submitted.")
    def base_serial(self) -> int | None:
        serial: int | None = self.row["base_serial"]
        return serial

    @strawberry.field(description="The plan's prior state is not the state's version then.")
    def stale(self) -> bool:
        return bool(self.row["stale"])

    @strawberry.field
    def terraform_version(self) -> str:
        return str(self.row["analysis"]["terraform_version"])

    @strawberry.field(description="Instances per action (and MOVE, IMPORT).")
    def summary(self) -> list[PlanCount]:
        counts = self.row["analysis"]["summary"]
        return [PlanCount(action=k, count=counts[k]) for k in sorted(counts)]

    @strawberry.field(description="One entry per resource instance, by address.")
    def changes(
        self, first: int = 100, after: str | None = None, action: TerraformAction | None = None
    ) -> list[PlannedResourceChange]:
        changes = self.row["analysis"]["changes"]
        if action is not None:
            changes = [c for c in changes if c["action"] == action.name]
        return [_change(c) for c in _window(changes, first, after)]

    @strawberry.field
    def output_changes(self) -> list[PlannedOutputChange]:
        return [
            PlannedOutputChange(
                name=o["name"],
                action=TerraformAction[o["action"]],
                before=o["before"],
                after=o["after"],
                sensitive=o["sensitive"],
            )
            for o in self.row["analysis"]["output_changes"]
        ]

    @strawberry.field(description="The plan's resource_drift: changes made outside Terraform.")
    def drift(self) -> list[PlannedResourceChange]:
        return [_change(c) for c in self.row["analysis"]["drift"]]

    @strawberry.field(
        description="The blast radius (dependents) of every instance the plan updates, "
        "replaces or deletes: each member once at its shortest depth."
    )
    async def impact(
        self, info: Info, first: int = 100, after: str | None = None, cross_states: bool = False
    ) -> list[PlanImpactMember]:
        members = await info.context.with_conn(
            impact.plan_impact,
            self.row,
            cross_states=cross_states,
            readable=info.context.principal.patterns,
        )
        return [
            PlanImpactMember(
                state=m.state,
                address=m.address,
                depth=m.depth,
                path=m.path,
                path_states=m.path_states,
                via=m.via,
            )
            for m in _window(members, first, after)
        ]

    @strawberry.field
    async def stale_consumers(self, info: Info) -> list[PlanStaleConsumer]:
        rows = await info.context.with_conn(
            store.stale_consumers, self.row, readable=info.context.principal.patterns
        )
        return [PlanStaleConsumer(**r) for r in rows]

    @strawberry.field(description="Policy findings on the planned values.")
    def violations(self) -> list[PlanViolation]:
        return [
            PlanViolation(
                policy=f["policy"],
                severity=f["severity"],
                enforce=f["enforce"],
                address=f["address"],
                opened=f["opened"],
            )
            for f in self.row["analysis"]["findings"]
        ]

    @strawberry.field(description="An enforce policy would be violated.")
    def blocked(self) -> bool:
        return any(f["enforce"] and f["opened"] for f in self.row["analysis"]["findings"])

    @strawberry.field(description="A summary for a pull request, at most 60,000 characters.")
    async def markdown(self, info: Info) -> str:
        return await info.context.with_conn(
            markdown.plan_markdown, self.row, readable=info.context.principal.patterns
        )


def plan_id(value: str) -> UUID:
    """A plan's id: its global id (as `id` and `node` give it) or the bare UUID (as the
    HTTP answer, the CLI and the plan-submitted event give it)."""
    try:
        return UUID(value)
    except ValueError:
        pass
    try:
        found = relay.GlobalID.from_id(value)
        if found.type_name == "TerraformPlan":
            return UUID(found.node_id)
    except (relay.GlobalIDValueError, ValueError):
        pass
    raise BadInput(f"invalid plan id {value!r}")
