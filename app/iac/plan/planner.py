"""The planner: the parts composed, each line planned, the whole plan."""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.iac.fields import (
    REQUIRED_ON_CREATE,
    authored_live,
    desired_of,
    last_applied_of,
    redact,
    same,
)
from app.iac.model import Document, Line
from app.iac.plan.digest import plan_hash
from app.iac.plan.model import ACTIONS, KIND_RANK, Change, Live, Plan, PlanError, Step
from app.iac.plan.records import Records
from app.iac.plan.references import References
from app.iac.plan.resolution import Resolution
from app.iac.state import StateRow, seal_secrets


class _Planner(Resolution, References, Records):
    """Lines in kind order: bound first, then each resolved, checked and turned into a step;
    orphaned rows, column names and records after."""

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
            plan_hash(self.doc, self.claims.values(), self.read, self.actions),
            summary,
            tuple(self.actions),
            tuple(self.warnings),
            tuple(self.steps),
            tuple(records),
            tuple((row, ref) for ref, row in self.followed.items()),
        )

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
