"""What a plan is: its actions, the steps apply takes, and the live catalog it reads."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from app.catalog.kinds import RESOURCE_KINDS
from app.graph.policies import Finding
from app.iac.model import DocumentError, Line, LineError
from app.iac.state import StateRow

# Dependency order, parents before children (the catalog's order): apply creates in
# this order and deletes in reverse.
KIND_ORDER: Final = tuple(RESOURCE_KINDS)

ACTIONS: Final = (
    "create",
    "update",
    "delete",
    "move",
    "adopt",
    "orphaned",
    "noop",
    "insert",
    "skip",
)
KIND_RANK: Final = {kind: rank for rank, kind in enumerate(KIND_ORDER)}


@dataclass(frozen=True, slots=True)
class Change:
    field: str
    desired: Any
    last_applied: Any
    live: Any
    reason: str  # intent | drift | both | create


@dataclass(frozen=True, slots=True)
class Action:
    action: str
    kind: str  # one of KIND_ORDER, or "record"
    ref: str
    reason: str
    changes: tuple[Change, ...] = ()
    line: int | None = None


@dataclass(frozen=True, slots=True)
class Step:
    """What apply does for one action: the line, the live resource it acts on, the fields
    to write (authored form), what state will remember of the declaration (`desired`
    without secrets), and the state row it replaces or deletes."""

    action: str
    kind: str
    ref: str
    line: Line | None = None
    live_id: str | None = None
    writes: Mapping[str, Any] = field(default_factory=dict)
    remembered: Mapping[str, Any] = field(default_factory=dict)
    row: StateRow | None = None  # the state row it had (for a move: under the old ref)


@dataclass(frozen=True, slots=True)
class RecordStep:
    table: str  # table ref
    line: int
    values: Mapping[str, Any]  # by column ref


@dataclass(frozen=True)
class Plan:
    system: str
    hash: str
    summary: dict[str, int]
    actions: tuple[Action, ...]
    warnings: tuple[str, ...]
    steps: tuple[Step, ...] = field(default=(), repr=False, compare=False)
    records: tuple[RecordStep, ...] = field(default=(), repr=False, compare=False)
    # undeclared state rows of a renamed table's sub-resources, with their new refs
    follows: tuple[tuple[StateRow, str], ...] = field(default=(), repr=False, compare=False)
    # the policy violations applying it would open (filled by the service, not hashed)
    violations: tuple[Finding, ...] = field(default=(), compare=False)

    @property
    def changes_anything(self) -> bool:
        return any(self.summary[a] for a in ACTIONS if a not in ("noop", "skip"))


class PlanError(DocumentError):
    """The document is valid but cannot be planned here; `claimed` when another system
    holds a resource it would take (a conflict rather than bad input)."""

    def __init__(self, errors: Iterable[LineError], *, claimed: bool) -> None:
        super().__init__(errors)
        self.claimed = claimed


@dataclass
class Live:
    """The live catalog of a scope, indexed (snapshot dicts from app.catalog.snapshot)."""

    by_id: dict[str, Mapping[str, Any]]
    tables_by_name: dict[str, list[Mapping[str, Any]]]
    children: dict[tuple[str, str], list[Mapping[str, Any]]]  # (table or scope, kind) -> rows
    commands_and_insights: dict[str, list[Mapping[str, Any]]]

    @classmethod
    def index(cls, snapshot: Iterable[Mapping[str, Any]]) -> "Live":
        live = cls({}, {}, {}, {})
        for resource in snapshot:
            live.by_id[resource["id"]] = resource
            if resource["kind"] == "table":
                live.tables_by_name.setdefault(resource["name"], []).append(resource)
            elif resource["table_id"] is not None:
                key = (resource["table_id"], resource["kind"])
                live.children.setdefault(key, []).append(resource)
            else:
                live.commands_and_insights.setdefault(resource["kind"], []).append(resource)
        return live

    def get(self, kind: str, resource_id: str | None) -> Mapping[str, Any] | None:
        found = self.by_id.get(resource_id) if resource_id is not None else None
        return found if found is not None and found["kind"] == kind else None
