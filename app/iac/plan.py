"""The planner: a document, the IaC state and the live catalog in, a plan out (pure).

Design: docs/iac.md ("State", "Three-way diff", "Missing, orphaned, absent").

Each declared line is resolved to at most one live resource, in this order:
1. its own state row (same kind, same qualified ref) whose live resource exists;
2. a move: the row of `renamed_from`, or the row under the old ref of a renamed table;
3. adoption by natural identity, when nothing in state binds it: a table by name, a
   column by name in its table, a grant by principal, the table's client access, a
   public read by ref (by the slug export gives a ref no document can write), an
   insight selection by chatroom; kinds without a unique identity by their declared
   fields (a rule by expression, a view or command by name, null when left out, a
   trigger by all its declared fields). When several match (table names repeat), the
   first free one in creation order, so an export plans back as adoptions.
A live resource claimed by another system is never adopted: the plan is refused,
naming that system (hand-over = release there, then adopt here).

Every token a present line names (its table, a view's columns, a public read's view,
selected tables, a reference target, a record's reference by key) must resolve to
exactly one resource that is live after apply: a present line of the document, else a
live resource this system manages under that ref; never an orphaned row's dead ID or
the old ref of a move. Undeclared sub-resources of a renamed table follow it to the
new table ref (`follows`); a line claiming such a ref as another kind is refused.
Whatever plans cleanly applies cleanly.

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
from app.catalog.schema import REF
from app.catalog.values import check_value
from app.graph.policies import Finding
from app.iac.exactjson import canonical
from app.iac.export import generated_ref
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
from app.iac.model import Document, DocumentError, Line, LineError, qualify
from app.iac.state import StateRow, seal_secrets, state_map

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
            named: bool = candidate["name"] == desired.get("name")
            return named
        case "grant":
            granted: bool = candidate["principal"] == line.ref
            return granted
        case "client_access":
            return True
        case "public_read":
            if REF.fullmatch(candidate["ref"]):
                same_ref: bool = candidate["ref"] == line.ref
                return same_ref
            # a live ref no document can write: export wrote its slug (+ _2, _3, ...)
            base = generated_ref("public_read", candidate)
            suffix = (line.ref or "").removeprefix(f"{base}_")
            return line.ref == base or (suffix != line.ref and suffix.isdigit())
        case "insight_selection":
            same_room: bool = candidate["chatroom"] == line.chatroom
            return same_room
    # an identity field left out matches a live null (an unnamed view adopts an unnamed one)
    names = _WEAK_IDENTITY[line.kind] or tuple(desired)
    return bool(names) and all(same(desired.get(n), candidate[n]) for n in names)


class _Planner:
    def __init__(
        self,
        doc: Document,
        rows: Sequence[StateRow],
        live: Live,
        records: Mapping[str, Sequence[Mapping[str, Any]]],
        secret_key: bytes,
    ) -> None:
        self.doc = doc
        self.secret_key = secret_key
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
        self.declared = {line.qualified_ref: line for line in doc.lines}
        self.moved_away: set[str] = set()  # old refs of moves: no longer names
        self.followed: dict[str, StateRow] = {}  # new ref -> row following its table

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
            name = (line.spec or {}).get("name")
            # a None name is no key of the name-keyed index: no candidates, as the lookup gave
            return self.live.tables_by_name.get(name, []) if name is not None else []
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
        # Several may match (table names repeat; the weak kinds have no unique identity):
        # the first free one in creation order, so the n-th line of a name adopts the n-th
        # live resource of that name, as export wrote them.
        if free:
            self.adopted.add(free[0]["id"])
            return free[0]
        if line.kind in _WEAK_IDENTITY:
            return None
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
            # a table name may repeat, and one a line of this document declares is its own
            # (under its new name, if it changes): creating another is no rename
            if line.kind != "table" and holder.ref not in self.declared:
                self._error(
                    line,
                    f"the live {line.kind} it names is already bound to {holder.ref} by this "
                    f"system; to rename, declare renamed_from: {holder.ref!r}",
                )
                return None
        return None

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
            if name in last:  # state keeps secrets as keyed hashes: compare those
                key = self.secret_key
                intent = not same(seal_secrets(want, key), last[name])
                drift = not same(seal_secrets(have, key), last[name])
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
            self._check_references(line)
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
                    last_applied_of(desired, self.secret_key),
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
                last_applied_of(desired, self.secret_key),
                row,
            ),
            reason,
            changes,
        )

    def _references(self, line: Line) -> list[tuple[str, str]]:
        """(kind, qualified ref) of every resource a present line names: its table, the
        tables it selects, a reference column's target, a view's columns, a public read's
        view."""
        spec = line.spec or {}
        options = spec.get("options") if line.kind == "column" else None
        target = options.get("target") if isinstance(options, dict) else None
        out = [("table", t) for t in (line.table, *(line.tables or ()), target) if t]
        if line.kind == "view" and isinstance(spec.get("columns"), list):
            out += [("column", qualify("column", c, line.table)) for c in spec["columns"]]
        if line.kind == "public_read" and line.view is not None:
            out.append(("view", qualify("view", line.view, line.table)))
        return out

    def _check_references(self, line: Line) -> None:
        """Every token of a present line resolves to exactly one resource that will be
        live after apply: a present line of this document, else a live resource this
        system manages under that ref (never an orphaned row's dead ID, never the old
        ref of a move). The document checked the lines it declares (kind, absent)."""
        for kind, ref in self._references(line):
            follower = self.followed.get(ref)
            if ref in self.declared or (follower is not None and follower.resource_type == kind):
                continue
            row = self._row(kind, ref)
            if row is None or ref in self.moved_away:
                problem = "is neither declared in this document nor managed by system"
                self._error(line, f"{kind} {ref} {problem} {self.system!r}")
            elif self.live.get(kind, row.resource_id) is None:
                self._error(
                    line,
                    f"{kind} {ref} is managed by system {self.system!r} but its live "
                    f"resource {row.resource_id} is gone (declare it to re-create it)",
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
                        canonical([record["values"].get(keys[c]) for c in columns])
                        for record in self.records.get(table_id, ())
                    }
                if canonical([record.key[c] for c in columns]) in index:
                    action = "skip"
            reason = "a record with this key exists" if action == "skip" else "key not found"
            self.actions.append(Action(action, "record", ref, reason, (), record.line))
            if action == "insert":
                steps.append(RecordStep(record.table, record.line, record.values))
        self._check_reference_values(steps, column_keys)
        self._check_column_constraints(steps)
        return steps

    def _final_columns(self) -> dict[str, list[tuple[str | None, Mapping[str, Any], Line | None]]]:
        """Table ref -> its columns after apply: (column ref, fields, line), the fields the
        live ones merged with what the plan writes (ref None: undeclared, left alone)."""
        out: dict[str, list[tuple[str | None, Mapping[str, Any], Line | None]]] = {}
        touched = set()
        for step in self.steps:
            line = step.line
            if step.kind != "column" or line is None or line.absent:
                continue
            live = self.live.get("column", step.live_id) or {}
            touched.add(step.live_id)
            out.setdefault(line.table or "", []).append((line.ref, {**live, **step.writes}, line))
        table_refs = self.refs.tables  # live table ID -> its ref (declared or managed)
        for (table_id, kind), columns in self.live.children.items():
            if kind == "column" and table_id in table_refs:
                out.setdefault(table_refs[table_id], []).extend(
                    (None, c, None) for c in columns if c["id"] not in touched
                )
        return out

    def _check_column_constraints(self, inserts: Sequence[RecordStep]) -> None:
        """What the catalog checks on apply, checked here against the live records (read
        for the tables `record_tables` names): a reference column has no default, a column
        made required has a value in every record, one made unique no repeated value, a
        retyped one fits every stored value; each inserted record has every required
        column (or its default), repeats no unique value (among the live ones and the
        inserted ones), and a reference given as a record ID names a record of the target
        table."""
        for table, columns in self._final_columns().items():
            live_records = self.records.get(self._table_id(table) or "", ())
            added = [step for step in inserts if step.table == table]
            for ref, fields, line in columns:
                key = column_key(fields["id"]) if "id" in fields else None
                was = self.live.get("column", fields.get("id")) or {}
                name = fields.get("name")
                problems = []
                # the type may be the live one, left out of the declaration
                reference = fields.get("type") == "reference"
                if line is not None and reference and fields.get("default") is not None:
                    problems.append("a reference column takes no default")
                if line is not None and was and not problems:
                    problems += self._retype_problems(fields, was, key, live_records)
                if line is not None and fields.get("required") and not was.get("required"):
                    missing = sum(key is None or key not in r["values"] for r in live_records)
                    if missing:
                        problems.append(
                            f"column {name!r} cannot be required: {missing} live record(s) "
                            f"of table {table} have no value for it"
                        )
                if line is not None and fields.get("unique") and was and not was.get("unique"):
                    values = [
                        canonical(r["values"][key]) for r in live_records if key in r["values"]
                    ]
                    if len(values) != len(set(values)):
                        problems.append(
                            f"column {name!r} cannot be unique: live records of table {table} "
                            f"repeat a value"
                        )
                for message in problems:
                    assert line is not None
                    self._error(line, message)
                self._check_inserted(table, ref, fields, key, live_records, added)

    def _retype_problems(
        self,
        fields: Mapping[str, Any],
        was: Mapping[str, Any],
        key: str | None,
        live_records: Sequence[Mapping[str, Any]],
    ) -> list[str]:
        """A changed type or options must fit every stored value (the catalog's check)."""
        options = dict(fields.get("options") or {})
        if "target" in options:
            options["table"] = self._table_id(options.pop("target"))
        column = {**fields, "options": options}
        if (column["type"], options) == (was["type"], was["options"]) or key is None:
            return []
        targets = {r["id"] for r in self.records.get(options.get("table") or "", ())}
        for record in live_records:
            if key not in record["values"]:
                continue
            try:
                value = check_value(column, record["values"][key])
            except ValueError as exc:
                return [f"column {fields['name']!r}: record {record['id']} does not fit: {exc}"]
            if column["type"] == "reference" and value not in targets:
                return [f"column {fields['name']!r}: no record {value} in the referenced table"]
        return []

    def _check_inserted(
        self,
        table: str,
        ref: str | None,
        fields: Mapping[str, Any],
        key: str | None,
        live_records: Sequence[Mapping[str, Any]],
        added: Sequence[RecordStep],
    ) -> None:
        """The records this document inserts into `table` fit one of its columns."""
        name = fields.get("name")
        seen: set[bytes] = set()
        if fields.get("unique") and key is not None:
            seen = {canonical(r["values"][key]) for r in live_records if key in r["values"]}
        options = fields.get("options") or {}
        # live options name the target table by ID, authored ones (being written) by ref
        target = self._table_id(options["target"]) if "target" in options else options.get("table")
        ids = {r["id"] for r in self.records.get(target or "", ())}
        for record in added:
            value = record.values.get(ref) if ref is not None else None
            # the default fills a missing value, not a null one (the catalog drops nulls)
            given = ref is not None and ref in record.values
            default = None if given else fields.get("default")
            if value is None and fields.get("required") and default is None:
                message = f"column {name!r} of table {table} is required and has no value"
            elif value is not None and fields.get("unique") and canonical(value) in seen:
                message = f"column {name!r} of table {table} is unique: {value!r} repeats"
            elif isinstance(value, str) and fields.get("type") == "reference" and target:
                if value in ids:
                    continue
                message = f"column {name!r}: no record {value} in the referenced table"
            else:
                if value is not None and fields.get("unique"):
                    seen.add(canonical(value))
                continue
            self.errors.append(LineError(record.line, "record", None, message))

    def _check_reference_values(
        self, inserts: Sequence[RecordStep], column_keys: Mapping[str, Mapping[str, str]]
    ) -> None:
        """A reference value written as the key of a record of the target table (as export
        writes it) names exactly one record, as apply will look for it: live, or inserted
        earlier by this document (in apply's table order), by columns that resolve."""
        targets = reference_targets(self.doc.lines)
        order = {table: n for n, table in enumerate(insert_order(inserts, targets))}
        for step in inserts:
            for column, value in step.values.items():
                target = targets.get((step.table, column))
                if target is None or not isinstance(value, dict):
                    continue
                resolved = {k: self._column_key(target, k, column_keys) for k in value}
                unknown = [k for k, (known, _) in resolved.items() if not known]
                keys = {k: key for k, (_, key) in resolved.items()}
                if unknown:
                    message = (
                        f"values.{column}: {target}.{unknown[0]} is not a column of "
                        f"table {target} declared here or managed by system {self.system!r}"
                    )
                else:
                    wanted = {k: canonical(v) for k, v in value.items()}
                    live = sum(
                        all(
                            key is not None and canonical(record["values"].get(key)) == wanted[k]
                            for k, key in keys.items()
                        )
                        for record in self.records.get(self._table_id(target) or "", ())
                    )
                    earlier = order[target] < order[step.table] if target in order else False
                    added = sum(
                        all(canonical(other.values.get(k)) == v for k, v in wanted.items())
                        for other in inserts
                        if earlier and other.table == target
                    )
                    if live + added == 1:
                        continue
                    message = (
                        f"values.{column}: the reference {canonical(value).decode()} matches "
                        f"{live + added} records of table {target}, not one"
                    )
                self.errors.append(LineError(step.line, "record", None, message))

    def _column_key(
        self, table: str, ref: str, declared: Mapping[str, Mapping[str, str]]
    ) -> tuple[bool, str | None]:
        """(whether `table`.`ref` is a column, its live key): a column bound to a line of
        this document (key None while it is to be created), else one this system manages."""
        qualified = qualify("column", ref, table)
        line = self.declared.get(qualified)
        if line is not None:
            return line.kind == "column", declared.get(table, {}).get(ref)
        row = self._row("column", qualified)
        if row is None or qualified in self.moved_away:
            follower = self.followed.get(qualified)
            row = follower if follower is not None and follower.resource_type == "column" else None
        if row is None or self.live.get("column", row.resource_id) is None:
            return False, None
        return True, column_key(row.resource_id)

    # --- the whole plan -------------------------------------------------------------------

    def run(self) -> Plan:
        self._index_state_refs()
        lines = sorted(self.doc.lines, key=lambda line: (KIND_RANK[line.kind], line.line))
        for line in lines:
            if line.kind == "table" and line.renamed_from is not None:
                self.moved_tables[line.ref or ""] = line.renamed_from
        # Bind every present line first, so IDs translate to the document's refs before
        # any field is compared (a view's columns, a reference column's target).
        for line in lines:
            if not line.absent:
                self._prebind(line)
        self._follow_renamed_tables(lines)
        for line in lines:
            self._plan_line(line)
        for _, row in sorted(
            self.state.items(), key=lambda i: (KIND_RANK[i[1].resource_type], i[0])
        ):
            if (
                row.key not in self.used_rows
                and self.live.get(row.resource_type, row.resource_id) is None
            ):
                self._orphan(row)
        self._check_column_names()
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
            tuple((row, ref) for ref, row in self.followed.items()),
        )

    def _follow_renamed_tables(self, lines: Sequence[Line]) -> None:
        """The refs a move frees, and the undeclared sub-resources of a renamed table that
        follow it to the new table ref (apply rewrites their rows). A line claiming such a
        new ref as another kind would make two resources answer to one token: refused."""
        resolved = set()
        for line in lines:
            if (row := self._row(line.kind, line.qualified_ref)) is not None:
                resolved.add(row.key)
            old, moved = self._moved_row(line)
            if old is not None and moved is not None:
                resolved.add(moved.key)
                self.moved_away.add(old)
        for new_table, old_table in self.moved_tables.items():
            table_row = self._row("table", old_table)
            if table_row is None or self.live.get("table", table_row.resource_id) is None:
                continue
            old_prefix = f"{old_table}."
            for row in self.state.values():
                if row.table_id != table_row.resource_id or not row.ref.startswith(old_prefix):
                    continue
                self.moved_away.add(row.ref)
                if row.key in resolved or self.live.get(row.resource_type, row.resource_id) is None:
                    continue
                new = f"{new_table}.{row.ref.removeprefix(old_prefix)}"
                self.followed[new] = row
                self.used_rows.add(row.key)
                if (clash := self.declared.get(new)) is not None:
                    self._error(
                        clash,
                        f"{new} is also the new ref of the {row.resource_type} {row.ref}, "
                        f"which follows its table renamed to {new_table}; declare that "
                        f"{row.resource_type} under another ref (renamed_from) or absent, "
                        f"or use another ref here",
                    )

    def _check_column_names(self) -> None:
        """Column names are unique per table: after apply, each table's columns (those the
        plan leaves alone, and those it creates, renames or keeps) have distinct names.
        Apply renames in two steps, so a swap of names among declared columns is fine."""
        touched = {s.live_id for s in self.steps if s.kind == "column" and s.line is not None}
        names: dict[Any, list[tuple[str, Step | None]]] = {}  # table -> (name, step)
        for (table_id, kind), columns in self.live.children.items():
            if kind == "column":
                for column in columns:
                    if column["id"] not in touched:
                        names.setdefault(table_id, []).append((column["name"], None))
        for step in self.steps:
            if step.kind != "column" or step.line is None or step.line.absent:
                continue
            live = self.live.get("column", step.live_id)
            name = step.writes.get("name", live["name"] if live else None)
            if name is not None:  # else nothing creates it (refused already)
                table = self._table_id(step.line.table) or ("new", step.line.table)
                names.setdefault(table, []).append((name, step))
        for group in names.values():
            seen: dict[str, Step | None] = {}
            for name, entry in group:
                if name in seen and entry is not None and entry.line is not None:
                    other = seen[name]
                    holder = f"that of {other.ref}" if other else "an undeclared column's"
                    self._error(entry.line, f"column name {name!r} is {holder} in this table")
                seen.setdefault(name, entry)

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


def reference_targets(lines: Iterable[Line]) -> dict[tuple[str, str], str]:
    """(table ref, column ref) -> target table ref, for the present reference columns."""
    out = {}
    for line in lines:
        spec = line.spec or {}
        if line.kind == "column" and not line.absent and spec.get("type") == "reference":
            out[(line.table or "", line.ref or "")] = spec["options"]["target"]
    return out


def insert_order(
    records: Iterable[RecordStep], targets: Mapping[tuple[str, str], str]
) -> list[str]:
    """The tables whose records apply inserts, in its order: referenced tables first."""
    tables = list(dict.fromkeys(record.table for record in records))
    referenced = {target for (table, _), target in targets.items() if table in tables}
    return sorted(tables, key=lambda t: t not in referenced)


def make_plan(
    doc: Document,
    rows: Sequence[StateRow],
    snapshot: Iterable[Mapping[str, Any]],
    records: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    *,
    secret_key: bytes,
) -> Plan:
    """Plan `doc` against the scope's state rows (every system) and live snapshot.

    `records`: table ID -> its records' values by column key, for the tables the
    document's record lines name (see `record_tables`); `secret_key`: the key of the
    hashes state keeps of secret values (`state.secret_key`). Raises PlanError."""
    return _Planner(doc, rows, Live.index(snapshot), records or {}, secret_key).run()


def _checks_records(
    spec: Mapping[str, Any] | None, live: Mapping[str, Any] | None, table_refs: Mapping[str, str]
) -> bool:
    """Whether a column line may change what the stored records must fit (a superset).
    `table_refs`: live table ID -> its ref, to read a reference target as declared."""
    spec = spec or {}
    if live is None:  # new, or adopted by name: whatever it declares
        return bool(spec.get("required") or spec.get("unique") or "options" in spec)
    options = dict(live["options"] or {})
    if "table" in options:
        options["target"] = table_refs.get(options.pop("table"))
    return (
        (spec.get("required") is True and not live["required"])
        or (spec.get("unique") is True and not live["unique"])
        or spec.get("type", live["type"]) != live["type"]
        or spec.get("options", options) != options
    )


def record_tables(
    doc: Document, rows: Sequence[StateRow], snapshot: Iterable[Mapping[str, Any]]
) -> list[str]:
    """IDs of the live tables whose records the plan reads: the tables the document's
    record lines name and the targets of their reference columns, and the tables (and
    reference targets) of columns made required, unique or retyped; bound through state
    or by name (a superset)."""
    wanted = {record.table for record in doc.records}
    targets = reference_targets(doc.lines)
    wanted |= {target for (table, _), target in targets.items() if table in wanted}
    live = {r["id"]: r for r in snapshot if r["kind"] == "column"}
    bound = {r.ref: r.resource_id for r in rows if r.system == doc.system}
    table_refs = {
        r.resource_id: r.ref for r in rows if r.system == doc.system and r.resource_type == "table"
    }
    for line in doc.lines:  # columns whose change the stored records must fit
        if line.kind != "column" or line.absent:
            continue
        column = live.get(bound.get(line.qualified_ref, ""))
        if _checks_records(line.spec, column, table_refs):
            wanted.add(line.table or "")
            target = ((line.spec or {}).get("options") or {}).get("target")
            wanted |= {target} if isinstance(target, str) else set()
    if not wanted:
        return []
    own = {r.ref: r for r in rows if r.system == doc.system and r.resource_type == "table"}
    ids = {own[ref].resource_id for ref in wanted if ref in own}
    names = {
        name
        for line in doc.lines
        if line.kind == "table" and line.ref in wanted and (name := (line.spec or {}).get("name"))
    }
    return [
        r["id"] for r in snapshot if r["kind"] == "table" and (r["id"] in ids or r["name"] in names)
    ]
