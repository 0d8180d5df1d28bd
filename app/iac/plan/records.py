"""Records: insert or skip by key, references between records, and the live tables
whose records a plan reads."""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.iac.exactjson import canonical
from app.iac.fields import column_key
from app.iac.model import Document, Line, LineError, qualify
from app.iac.plan.constraints import Constraints
from app.iac.plan.model import Action, RecordStep
from app.iac.state import StateRow


class Records(Constraints):
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
