"""Column constraints: what the catalog checks on apply (names, types, required, unique,
references), checked against the live records and the ones a plan inserts."""

from collections.abc import Mapping, Sequence
from typing import Any

from app.catalog.values import check_value
from app.iac.exactjson import canonical
from app.iac.fields import column_key
from app.iac.model import Line, LineError
from app.iac.plan.base import PlanBase
from app.iac.plan.model import RecordStep, Step


class Constraints(PlanBase):
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
