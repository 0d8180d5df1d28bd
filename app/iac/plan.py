"""The planner: a document, the IaC state and the live catalog in, a plan out (pure).

Spec: shared/spec/iac.md ("State", "Three-way diff", "Missing, orphaned, absent").

Each declared line is resolved to at most one live resource, in this order:
1. its own state row (same kind, same qualified ref) whose live resource exists;
2. a move: the row of `renamed_from`, or the row under the old ref of a renamed table;
3. adoption by natural identity, when nothing in state binds it: a table by name, a
   column by name in its table, a grant by principal, the table's client access, a
   public read by ref, an insight selection by chatroom; kinds without a unique
   identity by their declared fields (a rule by expression, a view or command by name,
   a trigger by all its declared fields), the first free one in creation order.
A live resource claimed by another system is never adopted: the plan is refused,
naming that system (hand-over = release there, then adopt here).

Then, per field the declaration provides: desired vs last applied is intent, live vs
last applied is drift; a field is changed when desired differs from live. Fields the
declaration leaves out are not managed and never compared. Undeclared resources are
never touched; a state row whose live resource is gone is `orphaned` (cleaned up by
apply, and re-created when still declared). Records are `insert` unless a live record
has the same key values (`skip`); they are never updated.

The plan hash covers the canonical document, the state rows, the live resources the
plan read (fingerprints) and the resulting actions: apply replans and compares it.
"""

import dataclasses
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from app.catalog.kinds import RESOURCE_KINDS
from app.graph.policies import Finding
from app.iac.document import Document, DocumentError, Line, LineError, canonical, qualify
from app.iac.fields import (
    REQUIRED_ON_CREATE,
    RefIndex,
    authored_live,
    column_key,
    desired_of,
    last_applied_of,
    redact,
    same,
)
from app.iac.state import StateRow, state_map

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
_RANK = {kind: rank for rank, kind in enumerate(KIND_ORDER)}


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


# Kinds whose live resources have no unique identity: an unmanaged one is adopted when
# these declared fields equal its own (all declared fields for a trigger), so that an
# exported document planned back into its scope adopts instead of duplicating.
_WEAK_IDENTITY: Final[dict[str, tuple[str, ...] | None]] = {
    "rule": ("expression",),
    "view": ("name",),
    "command": ("name",),
    "trigger": None,
}


def _identity_matches(line: Line, desired: Mapping[str, Any], candidate: Mapping[str, Any]) -> bool:
    match line.kind:
        case "table" | "column":
            return candidate["name"] == desired.get("name")
        case "grant":
            return candidate["principal"] == line.ref
        case "client_access":
            return True
        case "public_read":
            return candidate["ref"] == line.ref
        case "insight_selection":
            return candidate["chatroom"] == line.chatroom
    names = _WEAK_IDENTITY[line.kind] or tuple(desired)
    return bool(names) and all(n in desired and same(desired[n], candidate[n]) for n in names)


class _Planner:
    def __init__(
        self,
        doc: Document,
        rows: Sequence[StateRow],
        live: Live,
        records: Mapping[str, Sequence[Mapping[str, Any]]],
    ) -> None:
        self.doc = doc
        self.system = doc.system
        self.live = live
        self.records = records
        prefer = {line.qualified_ref: line.kind for line in doc.lines}
        own = [r for r in rows if r.system == self.system]
        self.state, warnings = state_map(own, prefer)
        self.warnings: list[str] = list(warnings)
        # resource ID -> the row claiming it, every system (a claim is per live resource)
        self.claims = {r.resource_id: r for r in rows}
        self.errors: list[LineError] = []
        self.claim_errors = False
        self.read: dict[str, Mapping[str, Any]] = {}  # live resources the plan looked at
        self.steps: list[Step] = []
        self.actions: list[Action] = []
        self.used_rows: set[tuple[str, str]] = set()
        self.adopted: set[str] = set()  # live IDs adopted by a line of this plan
        self.bound: dict[str, str] = {}  # qualified ref -> live ID (resolved lines)
        self.table_ids: dict[str, str | None] = {}  # table ref -> live table ID (None: created)
        self.moved_tables: dict[str, str] = {}  # new table ref -> old table ref
        self.refs = RefIndex()

    # --- resolution -----------------------------------------------------------------

    def _error(self, line: Line, message: str, *, claim: bool = False) -> None:
        self.errors.append(LineError(line.line, line.kind, line.qualified_ref, message))
        self.claim_errors |= claim

    def _row(self, kind: str, qualified: str | None) -> StateRow | None:
        row = self.state.get(qualified) if qualified is not None else None
        return row if row is not None and row.resource_type == kind else None

    def _look(self, kind: str, resource_id: str | None) -> Mapping[str, Any] | None:
        found = self.live.get(kind, resource_id)
        if found is not None:
            self.read[found["id"]] = found
        return found

    def _table_id(self, table_ref: str | None) -> str | None:
        """The live ID of a table by ref: declared in the document (None while it is to be
        created), else managed by this system; None for no table (scope-level kinds)."""
        if table_ref is None:
            return None
        if table_ref in self.table_ids:
            return self.table_ids[table_ref]
        row = self._row("table", table_ref)
        found = self._look("table", row.resource_id) if row else None
        return found["id"] if found else None

    def _candidates(self, line: Line) -> list[Mapping[str, Any]]:
        if line.kind == "table":
            return self.live.tables_by_name.get((line.spec or {}).get("name"), [])
        if line.kind in ("command", "insight_selection"):
            return self.live.commands_and_insights.get(line.kind, [])
        parent = self._table_id(line.table)
        return self.live.children.get((parent, line.kind), []) if parent else []

    def _adoptable(self, line: Line, desired: Mapping[str, Any]) -> Mapping[str, Any] | None:
        if line.kind == "table" and "name" not in (line.spec or {}):
            return None
        matches = [
            c
            for c in self._candidates(line)
            if c["id"] not in self.adopted and _identity_matches(line, desired, c)
        ]
        for candidate in matches:
            self.read[candidate["id"]] = candidate
        free = [c for c in matches if c["id"] not in self.claims]
        if line.kind in _WEAK_IDENTITY:  # no unique identity: the first free one, or none
            if free:
                self.adopted.add(free[0]["id"])
            return free[0] if free else None
        for candidate in matches:
            holder = self.claims.get(candidate["id"])
            if holder is None:
                continue
            if holder.system != self.system:
                self._error(
                    line,
                    f"the live {line.kind} {candidate['id']} is managed by system "
                    f"{holder.system!r} as {holder.ref}; release it there before adopting it",
                    claim=True,
                )
                return None
            if not free and line.kind != "table":  # a table name may repeat; these may not
                self._error(
                    line,
                    f"the live {line.kind} it names is already bound to {holder.ref} by this "
                    f"system; to rename, declare renamed_from: {holder.ref!r}",
                )
                return None
        if len(free) > 1:
            self._error(line, f"{len(free)} live {line.kind}s match; adopting one is ambiguous")
            return None
        if free:
            self.adopted.add(free[0]["id"])
        return free[0] if free else None

    def _moved_row(self, line: Line) -> tuple[str | None, StateRow | None]:
        """The old qualified ref and its row when the line, its table or both were
        renamed (a column renamed in a renamed table was `{old table}.{old ref}`)."""
        old_table = self.moved_tables.get(line.table or "")
        candidates = [line.previous_qualified_ref]
        if old_table is not None:
            candidates.append(qualify(line.kind, line.renamed_from or line.ref, old_table))
        for old in candidates:
            if old is not None and (row := self._row(line.kind, old)) is not None:
                return old, row
        return None, None

    def _resolve(
        self, line: Line, desired: Mapping[str, Any]
    ) -> tuple[str, StateRow | None, Mapping[str, Any] | None, str]:
        """(how, row, live resource, reason); how is bound, moved, orphaned, adopted or new."""
        row = self._row(line.kind, line.qualified_ref)
        other = self.state.get(line.qualified_ref)
        if row is None and other is not None and other.resource_type != line.kind:
            self._error(
                line,
                f"{line.qualified_ref} is bound to a {other.resource_type} in state; a ref "
                f"cannot change kind (declare it absent under another ref or release it)",
            )
        if row is not None:
            self.used_rows.add(row.key)
            found = self._look(line.kind, row.resource_id)
            if found is not None:
                return "bound", row, found, ""
            return "orphaned", row, None, "its live resource is gone"
        old, old_row = self._moved_row(line)
        if old_row is not None:
            self.used_rows.add(old_row.key)
            found = self._look(line.kind, old_row.resource_id)
            if found is not None:
                return "moved", old_row, found, f"renamed from {old}"
            return "orphaned", old_row, None, "its live resource is gone"
        adopted = self._adoptable(line, desired)
        if adopted is not None:
            return "adopted", None, adopted, "unmanaged live resource with the same identity"
        return "new", None, None, ""

    # --- per line ---------------------------------------------------------------------

    def _remember(self, line: Line, live_id: str | None) -> None:
        if live_id is None:
            if line.kind == "table":
                self.table_ids[line.ref or ""] = None
            return
        self.bound[line.qualified_ref] = live_id
        if line.kind == "table":
            self.table_ids[line.ref or ""] = live_id
            self.refs.tables[live_id] = line.ref or ""
        elif line.kind == "column":
            self.refs.columns[live_id] = line.ref or ""
        elif line.kind == "view":
            self.refs.views[live_id] = line.ref or ""

    def _index_state_refs(self) -> None:
        """Refs of managed resources the document does not declare, for translating IDs."""
        table_refs = {
            r.resource_id: r.ref for r in self.state.values() if r.resource_type == "table"
        }
        for tid, ref in table_refs.items():
            self.refs.tables.setdefault(tid, ref)
        for row in self.state.values():
            if row.resource_type in ("column", "view") and row.table_id in table_refs:
                prefix = table_refs[row.table_id] + "."
                if row.ref.startswith(prefix):
                    index = self.refs.columns if row.resource_type == "column" else self.refs.views
                    index.setdefault(row.resource_id, row.ref[len(prefix) :])

    def _changes(
        self, line: Line, desired: Mapping[str, Any], row: StateRow | None, live: Mapping[str, Any]
    ) -> tuple[list[Change], dict[str, Any]]:
        current = authored_live(line.kind, live, self.refs, self.system)
        last = row.last_applied_spec if row is not None else {}
        changes: list[Change] = []
        writes: dict[str, Any] = {}
        for name, want in desired.items():
            have = current.get(name)
            if same(want, have):
                continue
            if name in last:
                intent, drift = not same(want, last[name]), not same(have, last[name])
                reason = "both" if intent and drift else "drift" if drift else "intent"
            else:
                reason = "intent"
            changes.append(Change(name, redact(want), redact(last.get(name)), redact(have), reason))
            writes[name] = want
        return changes, writes

    def _plan_line(self, line: Line) -> None:
        # an absent table may carry a spec: adopt it by name, then delete it
        declares = not line.absent or (line.kind == "table" and bool(line.spec))
        desired = desired_of(line, self.system) if declares else {}
        how, row, found, reason = self._resolve(line, desired)
        if not line.absent:
            self._check_tables_known(line)
        if how == "orphaned":
            self._orphan(row, line.line)  # type: ignore[arg-type]
        if line.absent:
            self._remember(line, None)
            if found is not None:
                self._add(
                    Step("delete", line.kind, line.qualified_ref, line, found["id"], row=row),
                    "state: absent" + (" (adopted, then deleted)" if how == "adopted" else ""),
                )
            elif how != "orphaned":
                self._add(Step("noop", line.kind, line.qualified_ref, line), "already absent")
            return
        if found is None:
            self._remember(line, None)
            missing = [f for f in REQUIRED_ON_CREATE.get(line.kind, ()) if f not in desired]
            if missing:
                self._error(line, f"creating it needs {', '.join('spec.' + m for m in missing)}")
            changes = [
                Change(name, redact(value), None, None, "create") for name, value in desired.items()
            ]
            self._add(
                Step(
                    "create",
                    line.kind,
                    line.qualified_ref,
                    line,
                    None,
                    dict(desired),
                    last_applied_of(desired),
                ),
                "repairs an orphaned state row" if how == "orphaned" else "declared, not live",
                changes,
            )
            return
        self._remember(line, found["id"])
        changes, writes = self._changes(line, desired, row, found)
        action = {"bound": "update" if changes else "noop", "moved": "move", "adopted": "adopt"}[
            how
        ]
        if not reason:
            reason = ", ".join(sorted({c.reason for c in changes})) if changes else "in sync"
        self._add(
            Step(
                action,
                line.kind,
                line.qualified_ref,
                line,
                found["id"],
                writes,
                last_applied_of(desired),
                row,
            ),
            reason,
            changes,
        )

    def _check_tables_known(self, line: Line) -> None:
        """Tables a line names (parent, selected tables, reference target) are declared
        in the document or managed by this system (the parser cannot know the latter)."""
        options = (line.spec or {}).get("options") if line.kind == "column" else None
        named = [line.table, *(line.tables or ()), (options or {}).get("target")]
        for ref in named:
            if ref is not None and ref not in self.table_ids and self._row("table", ref) is None:
                self._error(
                    line,
                    f"table {ref} is neither declared in this document nor managed by "
                    f"system {self.system!r}",
                )

    def _orphan(self, row: StateRow, line: int | None = None) -> None:
        self.used_rows.add(row.key)
        self._add(
            Step("orphaned", row.resource_type, row.ref, row=row),
            f"state names {row.resource_id}, which no longer exists",
            line=line,
        )

    def _add(
        self, step: Step, reason: str, changes: Sequence[Change] = (), line: int | None = None
    ) -> None:
        self.steps.append(step)
        number = step.line.line if step.line is not None else line
        self.actions.append(
            Action(step.action, step.kind, step.ref, reason, tuple(changes), number)
        )

    # --- records ----------------------------------------------------------------------

    def _column_keys(self) -> dict[str, dict[str, str]]:
        """Table ref -> {column ref: live column key}, for the bound columns."""
        out: dict[str, dict[str, str]] = {}
        for line in self.doc.lines:
            if line.kind == "column" and not line.absent:
                column_id = self.bound.get(line.qualified_ref)
                if column_id is not None:
                    out.setdefault(line.table or "", {})[line.ref or ""] = column_key(column_id)
        return out

    def _plan_records(self) -> list[RecordStep]:
        steps = []
        seen: dict[tuple[str, tuple[str, ...]], set[bytes]] = {}
        column_keys = self._column_keys()
        for record in self.doc.records:
            table_id = self._table_id(record.table)
            keys = column_keys.get(record.table, {})
            ref = f"{record.table} {canonical(record.key).decode()}"
            action = "insert"
            if table_id is not None and all(c in keys for c in record.key):
                columns = tuple(sorted(record.key))
                index = seen.get((table_id, columns))
                if index is None:
                    index = seen[(table_id, columns)] = {
                        canonical([values.get(keys[c]) for c in columns])
                        for values in self.records.get(table_id, ())
                    }
                if canonical([record.key[c] for c in columns]) in index:
                    action = "skip"
            reason = "a record with this key exists" if action == "skip" else "key not found"
            self.actions.append(Action(action, "record", ref, reason, (), record.line))
            if action == "insert":
                steps.append(RecordStep(record.table, record.line, record.values))
        return steps

    # --- the whole plan -------------------------------------------------------------------

    def run(self) -> Plan:
        self._index_state_refs()
        lines = sorted(self.doc.lines, key=lambda line: (_RANK[line.kind], line.line))
        for line in lines:
            if line.kind == "table" and line.renamed_from is not None:
                self.moved_tables[line.ref or ""] = line.renamed_from
        # Bind every present line first, so IDs translate to the document's refs before
        # any field is compared (a view's columns, a reference column's target).
        for line in lines:
            if not line.absent:
                self._prebind(line)
        for line in lines:
            self._plan_line(line)
        for _, row in sorted(self.state.items(), key=lambda i: (_RANK[i[1].resource_type], i[0])):
            if (
                row.key not in self.used_rows
                and self.live.get(row.resource_type, row.resource_id) is None
            ):
                self._orphan(row)
        records = self._plan_records()
        if self.errors:
            raise PlanError(self.errors, claimed=self.claim_errors)
        summary = dict.fromkeys(ACTIONS, 0)
        for action in self.actions:
            summary[action.action] += 1
        return Plan(
            self.system,
            self._hash(),
            summary,
            tuple(self.actions),
            tuple(self.warnings),
            tuple(self.steps),
            tuple(records),
        )

    def _prebind(self, line: Line) -> None:
        """Bind a line's live ID from state only (no errors, no adoption): a first pass."""
        row = self._row(line.kind, line.qualified_ref) or self._moved_row(line)[1]
        found = self.live.get(line.kind, row.resource_id) if row else None
        if found is not None:
            self._remember(line, found["id"])

    def _hash(self) -> str:
        digest = hashlib.sha256()
        for part in (
            [self.doc.system, self.doc.version],
            [_line_key(line) for line in self.doc.lines],
            [[r.line, r.table, r.key, r.values] for r in self.doc.records],
            sorted(
                [r.system, r.resource_type, r.ref, r.resource_id, r.table_id, r.last_applied_spec]
                for r in self.claims.values()
            ),
            [_fingerprint(self.read[i]) for i in sorted(self.read)],
            [
                [a.action, a.kind, a.ref, a.reason, [dataclasses.astuple(c) for c in a.changes]]
                for a in self.actions
            ],
        ):
            digest.update(canonical(part))
            digest.update(b"\n")
        return digest.hexdigest()


def _line_key(line: Line) -> list[Any]:
    return [
        line.line,
        line.kind,
        line.qualified_ref,
        line.state,
        line.spec,
        line.renamed_from,
        line.chatroom,
        list(line.tables or ()),
        line.view,
    ]


def _fingerprint(resource: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in resource.items() if k != "created_at"}


def make_plan(
    doc: Document,
    rows: Sequence[StateRow],
    snapshot: Iterable[Mapping[str, Any]],
    records: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> Plan:
    """Plan `doc` against the scope's state rows (every system) and live snapshot.

    `records`: table ID -> its records' values by column key, for the tables the
    document's record lines name (see `record_tables`). Raises PlanError."""
    return _Planner(doc, rows, Live.index(snapshot), records or {}).run()


def record_tables(
    doc: Document, rows: Sequence[StateRow], snapshot: Iterable[Mapping[str, Any]]
) -> list[str]:
    """IDs of the live tables whose records the plan compares keys against: the tables
    the document's record lines name, bound through state or by name (a superset)."""
    wanted = {record.table for record in doc.records}
    if not wanted:
        return []
    own = {r.ref: r for r in rows if r.system == doc.system and r.resource_type == "table"}
    names = {
        line.ref: (line.spec or {}).get("name")
        for line in doc.lines
        if line.kind == "table" and line.ref in wanted
    }
    out = []
    for resource in snapshot:
        if resource["kind"] != "table":
            continue
        for ref in wanted:
            row = own.get(ref)
            if (row is not None and row.resource_id == resource["id"]) or names.get(
                ref
            ) == resource["name"]:
                out.append(resource["id"])
                break
    return out
