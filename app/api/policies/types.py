"""The policy GraphQL types, built from the rows app/graph/policies.py read."""

import dataclasses
from datetime import datetime
from typing import Any

import strawberry

from app.api.graph.rows import state_of
from app.api.graph.state import State
from app.db import Row
from app.graph import policies

strawberry.enum(
    policies.Severity, name="PolicySeverity", description="How much a violation matters."
)
Severity = policies.Severity

_RESOURCE_TYPE = (
    "A glob over resource types (`*` any run, `?` one character): aws_s3_bucket, aws_*."
)
_STATES = "A glob over state names (prod/*); null: every state."
_PROVIDER = "A glob over provider addresses (*hashicorp/aws*); null: any provider."
_CONDITION = (
    "A SQL/JSON path predicate over the attributes that marks a violation, evaluated by "
    'PostgreSQL: $.acl == "public-read", !exists($.tags.owner). Sensitive values read as null; '
    "a condition naming a sensitive key is refused."
)
_ENFORCE = (
    "IaC applies that would open a violation are refused (their plan lists them first). "
    "Terraform writes are always stored: they are only warned about."
)


@strawberry.type(description="A saved check run on every write of the states it covers.")
class Policy:
    id: strawberry.ID
    name: str
    description: str
    severity: Severity
    resource_type: str = strawberry.field(description=_RESOURCE_TYPE)
    states: str | None = strawberry.field(description=_STATES)
    provider: str | None = strawberry.field(description=_PROVIDER)
    condition: str = strawberry.field(description=_CONDITION)
    enforce: bool = strawberry.field(description=_ENFORCE)
    created_by: str
    created_at: datetime
    updated_at: datetime


def policy_of(r: Row) -> Policy:
    return Policy(
        id=strawberry.ID(str(r["policy_id"])),
        name=r["policy_name"],
        description=r["policy_description"],
        severity=policies.Severity(r["policy_severity"]),
        resource_type=r["policy_resource_type"],
        states=r["policy_states"],
        provider=r["policy_provider"],
        condition=r["policy_condition"],
        enforce=r["policy_enforce"],
        created_by=r["policy_created_by"],
        created_at=r["policy_created_at"],
        updated_at=r["policy_updated_at"],
    )


@strawberry.type(description="Where a violation is: an address of a state.")
class ViolatingResource:
    address: str
    state: State


@strawberry.type(description="A point in a state's history: a serial, when, and by whom.")
class Mark:
    serial: int
    time: datetime
    actor: str = strawberry.field(
        description="Who wrote that version, or who made or changed the policy that found it."
    )


@strawberry.type(description="A resource violating a policy, over a range of its state's serials.")
class Violation:
    policy: Policy
    resource: ViolatingResource
    since: Mark = strawberry.field(description="When it was first seen.")
    resolved: Mark | None = strawberry.field(
        description="The write (or policy change) that resolved it; null while open."
    )
    open: bool


def violation_of(r: Row) -> Violation:
    resolved = r["serial_to"] is not None
    return Violation(
        policy=policy_of(r),
        resource=ViolatingResource(address=r["address"], state=state_of(r)),
        since=Mark(serial=r["serial_from"], time=r["opened_at"], actor=r["opened_by"]),
        resolved=Mark(serial=r["serial_to"], time=r["resolved_at"], actor=r["resolved_by"])
        if resolved
        else None,
        open=not resolved,
    )


@strawberry.type(description="A violation an IaC plan would open.")
class PolicyFinding:
    policy: str
    severity: Severity
    enforce: bool = strawberry.field(description="True: the apply will be refused.")
    state: str
    address: str

    @classmethod
    def of(cls, f: policies.Finding) -> "PolicyFinding":
        return cls(
            policy=f.policy,
            severity=policies.Severity(f.severity),
            enforce=f.enforce,
            state=f.state,
            address=f.address,
        )


@strawberry.input
class CreatePolicyInput:
    name: str
    resource_type: str = strawberry.field(description=_RESOURCE_TYPE)
    condition: str = strawberry.field(description=_CONDITION)
    severity: Severity = policies.Severity.WARNING
    description: str = ""
    states: str | None = strawberry.field(default=None, description=_STATES)
    provider: str | None = strawberry.field(default=None, description=_PROVIDER)
    enforce: bool = strawberry.field(default=False, description=_ENFORCE)

    def to_spec(self) -> policies.PolicySpec:
        return policies.PolicySpec(
            name=self.name,
            resource_type=self.resource_type,
            condition=self.condition,
            severity=self.severity,
            description=self.description,
            states=self.states,
            provider=self.provider,
            enforce=self.enforce,
        )


@strawberry.input(description="The policy `name`, and the fields to change (the others stay).")
class UpdatePolicyInput:
    name: str
    resource_type: str | None = strawberry.UNSET
    condition: str | None = strawberry.UNSET
    severity: Severity | None = strawberry.UNSET
    description: str | None = strawberry.UNSET
    states: str | None = strawberry.field(default=strawberry.UNSET, description=_STATES)
    provider: str | None = strawberry.field(default=strawberry.UNSET, description=_PROVIDER)
    enforce: bool | None = strawberry.UNSET

    def changes(self) -> dict[str, Any]:
        """The fields given (null is a value only for the two optional globs)."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name != "name" and getattr(self, f.name) is not strawberry.UNSET
        }
