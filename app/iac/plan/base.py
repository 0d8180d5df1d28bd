"""The planner's working state and the primitives every part of it shares."""

from collections.abc import Mapping, Sequence
from typing import Any

from app.iac.fields import RefIndex
from app.iac.model import Document, Line, LineError
from app.iac.plan.model import Action, Change, Live, Step
from app.iac.state import StateRow, state_map


class PlanBase:
    """One plan in the making: the document, the state rows, the live catalog and records it
    reads, and what it has decided so far (bindings, steps, actions, errors)."""

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
