"""What changed: a resource's history, and the diff of two versions."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.scalars import JSON

from app.graph import diff as graph_diff
from app.graph import history as graph_history


@strawberry.type
class AttributeChange:
    path: list[str]
    old: JSON | None = strawberry.field(description="Null when absent or sensitive.")
    new: JSON | None = strawberry.field(description="Null when absent or sensitive.")
    sensitive: bool

    @classmethod
    def of(cls, a: graph_diff.AttributeChange) -> AttributeChange:
        return cls(path=list(a.path), old=a.old, new=a.new, sensitive=a.sensitive)


HistoryChange = graph_history.Change
strawberry.enum(HistoryChange, name="HistoryChange")


@strawberry.type(description="A version in which a resource's address changed.")
class HistoryEntry:
    serial: int
    change: HistoryChange
    created_at: datetime | None = strawberry.field(
        description="When the version was written (null when retention removed it)."
    )
    actor: str | None
    attributes: list[AttributeChange] = strawberry.field(
        description="CHANGED: the attribute paths that changed (sensitive values null)."
    )
    fields: list[str] = strawberry.field(
        description="CHANGED: the instance's other fields that changed (status, "
        "dependencies, private, ...), by name."
    )

    @classmethod
    def of(cls, e: graph_history.HistoryEntry) -> HistoryEntry:
        return cls(
            serial=e.serial,
            change=e.change,
            created_at=e.created_at,
            actor=e.actor,
            attributes=[AttributeChange.of(c) for c in e.attributes],
            fields=e.fields,
        )


@strawberry.type
class ResourceChange:
    address: str
    changes: list[AttributeChange]


@strawberry.type
class VersionDiff:
    against: int = strawberry.field(description="The serial compared with.")
    added: list[str] = strawberry.field(description="Addresses only in this version.")
    removed: list[str] = strawberry.field(description="Addresses only in `against`.")
    changed: list[ResourceChange] = strawberry.field(
        description="Addresses in both whose attributes differ."
    )

    @classmethod
    def of(cls, d: graph_diff.VersionDiff) -> VersionDiff:
        return cls(
            against=d.against,
            added=d.added,
            removed=d.removed,
            changed=[
                ResourceChange(
                    address=c.address,
                    changes=[AttributeChange.of(a) for a in c.changes],
                )
                for c in d.changed
            ],
        )
