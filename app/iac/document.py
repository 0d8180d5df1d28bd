"""Parse an IaC JSONL document into typed, validated lines (pure: no I/O).

`parse_document(bytes)` returns a `Document` or raises `DocumentError` with
every problem of the document at once (design: docs/iac.md; "nothing is
half-planned", so a document with any error yields nothing). What each line may
carry is rules.py's (from the catalog's kinds); this module reads the lines and
checks them against each other.

Decisions where the spec is silent:

- Line numbers are 1-based physical lines (`\\n`-separated; a trailing `\\r`
  and blank lines are tolerated and still counted). A UTF-8 BOM at the very
  start is skipped. Document-level errors (size, empty) carry line 0.
- The header must be the first non-blank line; its `version` must be the
  integer 1.
- `Line.ref` is the line's identity within its namespace: the authored `ref`;
  the principal for a grant; the chatroom UUID for an insight_selection;
  None for client_access (it has no ref).
- Grant identity: a present grant names its principal in `spec.principal` or
  a top-level `principal` (both allowed; they must agree). An absent grant
  carries no spec, so it needs the top-level `principal`.
- `renamed_from` is allowed on the kinds with an authored ref (table, column,
  rule, trigger, view, command, public_read), never with `state: absent`. The
  old qualified ref may not be declared by any line nor renamed twice.
- insight_selection: `chatroom` is a hyphenated UUID, case-insensitive,
  normalized to lowercase; `tables` is required when present, and may be
  empty (nothing selected yet), as in the catalog.
- Reserved: the ref `client_access` in the per-table space (it belongs to the
  client_access line); `settings.client_access` in a table spec (it has its own
  line kind); tags `system:X` other than the document's own `system:S`.
- Cross-line checks: a present line may not use a table, column or view that
  this document declares absent, declares as another kind, or renamed away.
  Tables used but not declared are listed in `Document.undeclared_tables`
  (the planner checks them against state); `strict_tables=True` turns those
  not in `known_tables` into errors.
- Records: `key` values are non-null scalars. Key fields are merged into
  `values` (`RecordLine.values` holds the whole row); a column in both must
  hold an identical value. `values` may be omitted. Every column must be
  declared present for that table in this document, values must fit the
  column's declared type, and two records of a table may not share a key.
- Field values follow the catalog (app/catalog/kinds.py), which decides what
  the spec leaves open: rule severity is error, warning or info; grant
  permissions must be non-empty; list fields hold no duplicates; view `filter`
  is a string or object, `sort` a string, array or object; null is allowed
  where the catalog stores null (description, message, condition, view name,
  rate_limit, public_read view). A column's `options.values` /
  `options.target` only go with select / reference (or an omitted type); a
  `default` must fit the column type, and a reference column takes none.
- Lines are read by `app.jsonutil.read` (its limits: depth, U+0000, lone
  surrogates, NaN and Infinity); integers beyond 64 bits keep their exact
  value. A key repeated within one JSON object keeps its last value (as JSON
  parsers do).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from app.catalog import schema as s
from app.catalog.schema import REF
from app.catalog.values import ANY_VALUE, value_rule
from app.config import Settings
from app.iac.exactjson import canonical
from app.iac.model import (
    RESOURCE_KINDS,
    TABLE_SPACE_KINDS,
    Document,
    DocumentError,
    Line,
    LineError,
    RecordLine,
    qualify,
)
from app.iac.rules import (
    HEADER_FIELDS,
    LINE_RULES,
    RECORD_FIELDS,
    SPEC_RULES,
    SYSTEM,
    LineRule,
    fits,
)
from app.jsonutil import JsonInputError, read
from app.process import gc_paused

_BOM: Final = b"\xef\xbb\xbf"
_ALL_KINDS: Final = ("header", *RESOURCE_KINDS, "record")


def parse_document(
    data: bytes,
    *,
    max_bytes: int = Settings.max_document_bytes,
    strict_tables: bool = False,
    known_tables: frozenset[str] = frozenset(),
) -> Document:
    """Parse and validate a whole document; raise DocumentError listing every problem.
    `max_bytes`: the server's Settings.max_document_bytes (its default here)."""
    if isinstance(data, str):
        raise TypeError("parse_document takes the document's bytes, not str")
    if len(data) > max_bytes:
        raise DocumentError(
            [LineError(0, None, None, f"document is {len(data)} bytes, over the {max_bytes} limit")]
        )
    with gc_paused():  # 100,000 lines make a million small objects, none cyclic
        return _Parser(strict_tables, known_tables).run(bytes(data))


def _missing(obj: dict[str, Any], names: tuple[str, ...], errors: list[str]) -> None:
    """Name each of `names` that `obj` lacks."""
    errors.extend(f"missing field {name}" for name in names if name not in obj)


def _label(kind: str, obj: dict[str, Any]) -> str | None:
    """Best-effort qualified ref of a (possibly invalid) line, for error messages."""
    table = obj.get("table") if isinstance(obj.get("table"), str) else None
    if kind == "client_access":
        return qualify(kind, None, table) if table else None
    ref = {"grant": "principal", "insight_selection": "chatroom"}.get(kind, "ref")
    value = obj.get(ref)
    spec = obj.get("spec")
    if value is None and kind == "grant" and isinstance(spec, dict):
        value = spec.get("principal")
    if not isinstance(value, str):
        return None
    if kind == "insight_selection":
        value = value.lower()
    if kind in TABLE_SPACE_KINDS or kind == "grant":
        return qualify(kind, value, table) if table else value
    return qualify(kind, value)


_Source = tuple[int, str, str | None]  # a referring line: number, kind, error label


@dataclass(frozen=True, slots=True)
class _ColumnUse:
    """What records may put in one column, worked out once: when `usable`, values of a type
    in `fits` need no check and others one call of `problem`."""

    qualified: str
    error: str | None  # resolving the column: renamed away, absent, not a column
    declared: bool  # declared in this document (or renamed away: that is `error`)
    usable: bool  # declared, and no `error`
    fits: frozenset[type]  # empty unless usable
    problem: Callable[[Any], str | None]


def _key_identity(table: str, key: dict[str, Any]) -> tuple[Any, ...]:
    """Equal for two record keys of a table exactly when their canonical forms are; the
    usual key, one string, needs no serializing."""
    if len(key) == 1:
        ((column, value),) = key.items()
        if type(value) is str:
            return (table, column, value)
    return (table, canonical(key))


class _Parser:
    """One pass per line for shape, then one pass over all lines for cross-references."""

    def __init__(self, strict_tables: bool, known_tables: frozenset[str]) -> None:
        self.strict_tables = strict_tables
        self.known_tables = known_tables
        self.errors: list[LineError] = []
        self.lines: list[Line] = []
        self.records: list[RecordLine] = []
        self.system: str | None = None
        self.header_line = 0
        self.claims: dict[str, Line] = {}  # qualified ref -> its declaring line
        self.moves: dict[str, Line] = {}  # old qualified ref -> the line renaming it

    def run(self, data: bytes) -> Document:
        # One scan of the whole document; lines are scanned only if it finds a long run.
        first = 0
        for number, raw in enumerate(data.split(b"\n"), 1):
            if number == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            if not raw.strip(b" \t\r"):
                continue
            first = first or number
            obj = self._decode(number, raw)
            if obj is None:
                continue
            if first != number and obj.get("kind") == "record":
                self._record(number, obj)  # most lines: skip the dispatch
            else:
                self._line(number, obj, first == number)
        if not first:
            self.errors.append(
                LineError(0, None, None, "document is empty: expected a header line")
            )
        undeclared = self._cross_check()
        if self.errors:
            raise DocumentError(self.errors)
        assert self.system is not None
        return Document(self.system, 1, tuple(self.lines), tuple(self.records), undeclared)

    def _error(self, number: int, kind: str | None, ref: str | None, message: str) -> None:
        self.errors.append(LineError(number, kind, ref, message))

    def _decode(self, number: int, raw: bytes) -> dict[str, Any] | None:
        try:
            obj = read(raw)
        except JsonInputError as exc:
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as bad:
                self._error(number, None, None, f"not valid UTF-8 (byte {bad.start + 1})")
            else:
                self._error(number, None, None, str(exc))
            return None
        if not isinstance(obj, dict):
            self._error(number, None, None, f"a line must be a JSON object, got {s.json_type(obj)}")
            return None
        return obj

    def _line(self, number: int, obj: dict[str, Any], first: bool) -> None:
        kind = obj.get("kind")
        if type(kind) is not str or kind not in _ALL_KINDS:
            expected = ", ".join(_ALL_KINDS)
            message = "missing field kind" if kind is None else f"unknown kind {s.show(kind)}"
            self._error(number, None, None, f"{message} (expected one of {expected})")
            return
        if first and kind != "header":
            self._error(
                number,
                kind,
                _label(kind, obj) if kind in LINE_RULES else None,
                "the first line must be the header: "
                '{"kind": "header", "system": ..., "version": 1}',
            )
        if kind == "header":
            self._header(number, obj, first)
        elif kind == "record":
            self._record(number, obj)
        elif kind in LINE_RULES:
            self._resource(number, obj, kind)

    def _header(self, number: int, obj: dict[str, Any], first: bool) -> None:
        problems = s.Problems(collect=True)
        errors = problems.messages
        if not first:
            seen = f" (the header is on line {self.header_line})" if self.header_line else ""
            errors.append(f"the header must be the first line and appear once{seen}")
        s.check_fields(obj, HEADER_FIELDS, "", problems)
        _missing(obj, ("system", "version"), errors)
        version = obj.get("version", 1)
        if type(version) is not int or version != 1:
            errors.append(f"version must be 1, got {s.show(version)}")
        for message in errors:
            self._error(number, "header", None, message)
        if first:
            self.header_line = number
            system = obj.get("system")
            self.system = system if fits(system, SYSTEM) else None

    def _resource(self, number: int, obj: dict[str, Any], kind: str) -> None:
        rule = LINE_RULES[kind]
        problems = s.Problems(collect=True)
        errors = problems.messages
        s.check_fields(obj, rule.fields, "", problems)
        _missing(obj, rule.required, errors)
        state = obj.get("state", "present")
        absent = state == "absent"
        spec = obj.get("spec")
        if rule.spec is not None:
            if absent and "spec" in obj and kind != "table":
                errors.append("spec is not allowed with state absent (only a table may keep one)")
            elif not absent and "spec" not in obj:
                errors.append(f"missing field spec: a present {kind} needs a spec object")
            elif "spec" in obj:
                rule.spec.check(spec, "spec", problems)
                if isinstance(spec, dict) and kind in SPEC_RULES:
                    SPEC_RULES[kind](spec, self.system, errors)
        spec = spec if isinstance(spec, dict) else None

        table = obj.get("table") if rule.in_table else None
        ref = obj.get("ref") if rule.ref else None
        renamed = obj.get("renamed_from")
        if renamed is not None:
            if renamed == ref:
                errors.append("renamed_from must differ from ref")
            if absent:
                errors.append("renamed_from cannot be combined with state absent")
        if kind in TABLE_SPACE_KINDS and ref == "client_access":
            errors.append("ref client_access is reserved for the table's client_access line")
        chatroom = tables = view = None
        if kind == "grant":
            top, inner = obj.get("principal"), (spec or {}).get("principal")
            if top is not None and inner is not None and top != inner:
                errors.append(f"principal {s.show(top)} and spec.principal {s.show(inner)} differ")
            ref = top if top is not None else inner
            if ref is None:
                errors.append(
                    "missing principal: set spec.principal, or a top-level principal "
                    "(required with state absent)"
                )
        elif kind == "insight_selection":
            chatroom = obj.get("chatroom")
            ref = chatroom = chatroom.lower() if isinstance(chatroom, str) else None
            tables = obj.get("tables")
            if "chatroom" not in obj:
                errors.append("missing field chatroom")
            if not absent and "tables" not in obj:
                errors.append("missing field tables: a present insight_selection lists its tables")
            tables = tuple(tables) if isinstance(tables, list) else None
        elif kind == "public_read":
            view = obj.get("view")

        label = _label(kind, obj) if errors else None
        for message in errors:
            self._error(number, kind, label, message)
        if tables is not None and not all(isinstance(t, str) for t in tables):
            tables = None
        if self._identity_ok(rule, kind, ref, table, state, renamed):
            self.lines.append(
                Line(
                    number,
                    kind,
                    ref,
                    qualify(kind, ref, table),
                    table,
                    state,
                    spec,
                    renamed,
                    chatroom,
                    tables,
                    view if isinstance(view, str) else None,
                )
            )

    @staticmethod
    def _identity_ok(
        rule: LineRule, kind: str, ref: Any, table: Any, state: Any, renamed: Any
    ) -> bool:
        """Whether the line's identity is sound enough to take part in cross-checks."""
        return (
            state in ("present", "absent")
            and (kind == "client_access" or fits(ref, rule.identity))
            and (not rule.in_table or fits(table, REF))
            and (renamed is None or (fits(renamed, rule.ref) and renamed != ref))
        )

    def _record(self, number: int, obj: dict[str, Any]) -> None:
        problems = s.Problems(collect=True)
        errors = problems.messages
        table, key, values = obj.get("table"), obj.get("key"), obj.get("values", {})
        table_ok = fits(table, REF)
        # The field checks below find nothing on a well-formed record: skip them then.
        if not (
            obj.keys() <= RECORD_FIELDS.keys()
            and table_ok
            and type(key) is dict
            and type(values) is dict
        ):
            s.check_fields(obj, RECORD_FIELDS, "", problems)
            _missing(obj, ("table", "key"), errors)
        if isinstance(key, dict):
            if not key:
                errors.append("key must name at least one column")
            for column, value in key.items():
                if type(value) not in (str, int, float, bool):
                    errors.append(f"key.{column} must be a string, number or boolean")
                elif (
                    isinstance(values, dict)
                    and column in values
                    and canonical(value) != canonical(values[column])
                ):
                    errors.append(f"key.{column} and values.{column} differ")
        for message in errors:
            self._error(number, "record", None, message)
        if table_ok and isinstance(key, dict) and key and isinstance(values, dict):
            assert isinstance(table, str)  # table_ok
            values.update(key)  # same order as {**values, **key}; the parsed dict is ours
            self.records.append(RecordLine(number, table, key, values))

    # --- cross-line checks ---------------------------------------------------------

    def _cross_check(self) -> tuple[str, ...]:
        """Duplicates, renames and references between lines; returns undeclared tables."""
        claims = self.claims
        for line in self.lines:
            other = claims.setdefault(line.qualified_ref, line)
            if other is not line:
                shared = {line.kind, other.kind} <= TABLE_SPACE_KINDS and line.kind != other.kind
                hint = " (these kinds share one ref space per table)" if shared else ""
                self._about(
                    line,
                    f"{line.qualified_ref} is already declared by the {other.kind} "
                    f"on line {other.line}{hint}",
                )
        moves = self.moves
        for line in self.lines:
            old = line.previous_qualified_ref
            if old is None:
                continue
            if old in claims:
                other = claims[old]
                self._about(
                    line,
                    f"renamed_from {line.renamed_from}: {old} is still declared by the "
                    f"{other.kind} on line {other.line}",
                )
            elif (other := moves.setdefault(old, line)) is not line:
                self._about(
                    line,
                    f"renamed_from {line.renamed_from}: {old} is already renamed "
                    f"on line {other.line}",
                )

        used_tables: dict[str, list[_Source]] = {}
        for line in self.lines:
            source: _Source = (line.line, line.kind, line.qualified_ref)
            present, spec = not line.absent, line.spec
            for table in self._tables_used(line):
                used_tables.setdefault(table, []).append(source)
                self._resolve(source, present, "table", table)
            if line.kind == "view" and spec and isinstance(spec.get("columns"), list):
                for column in spec["columns"]:
                    if isinstance(column, str):
                        self._resolve(source, present, "column", f"{line.table}.{column}")
            if line.kind == "public_read" and line.view is not None:
                self._resolve(source, present, "view", f"{line.table}.{line.view}")

        self._check_records(used_tables)

        undeclared = sorted(t for t in used_tables if t not in claims and t not in moves)
        if self.strict_tables:
            for table in undeclared:
                if table not in self.known_tables:
                    for user in used_tables[table]:
                        self._error(
                            *user,
                            f"table {table} is not declared in this document nor already managed",
                        )
        return tuple(undeclared)

    @staticmethod
    def _tables_used(line: Line) -> list[str]:
        """Table refs a line depends on: its parent, selected tables, a reference target."""
        used = [line.table] if line.table else []
        used += [t for t in line.tables or () if fits(t, REF)]
        options = (line.spec or {}).get("options") if line.kind == "column" else None
        target = options.get("target") if isinstance(options, dict) else None
        if fits(target, REF):
            used.append(target)
        return used

    def _check_records(self, used_tables: dict[str, list[_Source]]) -> None:
        """Each record's table and columns resolve, its values fit, its key is unique.
        Records outnumber columns: each table and column is resolved once, not per record."""
        # table -> (why records cannot use it, its users in used_tables, its column uses)
        tables: dict[str, tuple[str | None, list[_Source], dict[str, _ColumnUse]]] = {}
        record_keys: dict[tuple[Any, ...], int] = {}
        for record in self.records:
            source = (record.line, "record", None)
            if (table := tables.get(record.table)) is None:
                table = tables[record.table] = (
                    self._resolution(True, "table", record.table)[1],
                    used_tables.setdefault(record.table, []),
                    {},
                )
            table_error, users, columns = table
            users.append(source)
            if table_error:
                self._error(*source, table_error)
            for column, value in record.values.items():
                if (use := columns.get(column)) is None:
                    use = columns[column] = self._column_use(f"{record.table}.{column}")
                if type(value) not in use.fits and (not use.usable or use.problem(value)):
                    self._record_value(record, source, column, value, use)
            identity = _key_identity(record.table, record.key)
            if (first := record_keys.setdefault(identity, record.line)) != record.line:
                self._error(*source, f"duplicate record: line {first} has the same key")

    def _column_use(self, qualified: str) -> _ColumnUse:
        """What records may put in the column `qualified` (`table.column`)."""
        target, error = self._resolution(True, "column", qualified)
        mover = self.moves.get(qualified)
        declared = target is not None or (mover is not None and mover.kind == "column")
        rule = ANY_VALUE
        if target is not None and target.kind == "column":
            rule = value_rule(target.spec or {}, authored=True)
        usable = declared and error is None
        return _ColumnUse(
            qualified, error, declared, usable, rule.fits if usable else frozenset(), rule.problem
        )

    def _record_value(
        self, record: RecordLine, source: _Source, column: str, value: Any, use: _ColumnUse
    ) -> None:
        """Report why a record cannot hold `value` in `column`."""
        where = "key" if column in record.key else "values"
        if use.error:
            self._error(*source, use.error)
        if not use.declared:
            self._error(
                *source,
                f"{where}.{column}: {use.qualified} is not a column declared in this document",
            )
        elif problem := use.problem(value):
            self._error(*source, f"{where}.{column} {problem}")

    def _resolve(self, source: _Source, present: bool, want: str, qualified: str) -> Line | None:
        """Check that `source` may use the `want` resource `qualified`; return its line."""
        target, error = self._resolution(present, want, qualified)
        if error:
            self._error(*source, error)
        return target

    def _resolution(
        self, present: bool, want: str, qualified: str
    ) -> tuple[Line | None, str | None]:
        """The line declaring `qualified`, and why a (present) user may not use it as a `want`."""
        target = self.claims.get(qualified)
        if target is None:
            mover = self.moves.get(qualified)
            if mover is not None and mover.kind == want:
                return None, (
                    f"{want} {qualified} was renamed to {mover.qualified_ref} on line {mover.line}"
                )
        elif target.kind != want:
            return target, (
                f"{qualified} is declared as a {target.kind} on line {target.line}, not a {want}"
            )
        elif present and target.absent:
            return target, f"{want} {qualified} is declared absent on line {target.line}"
        return target, None

    def _about(self, line: Line, message: str) -> None:
        self._error(line.line, line.kind, line.qualified_ref, message)
