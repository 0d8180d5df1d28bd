"""Parse an IaC JSONL document into typed, validated lines (pure: no I/O).

`parse_document(bytes)` returns a `Document` or raises `DocumentError` with
every problem of the document at once (spec: shared/spec/iac.md; "nothing is
half-planned", so a document with any error yields nothing).

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
  normalized to lowercase; `tables` is required (non-empty) when present.
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
- Enumerations the spec does not list: rule severity is error, warning or
  info; grant permissions must be non-empty; list fields hold no duplicates.
  A column's `options.values` / `options.target` only go with select /
  reference (or an omitted type); a `default` must fit the column type. View
  `filter` is a string or object, `sort` a string, array or object.
- Lines are read by `app.jsonutil.read` (its limits: depth, U+0000, lone
  surrogates, NaN and Infinity); integers beyond 64 bits keep their exact
  value. A key repeated within one JSON object keeps its last value (as JSON
  parsers do).
"""

import functools
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Final

import orjson

from app.catalog.kinds import SERVER_OWNED_SETTINGS
from app.jsonutil import JsonInputError, gc_paused, read

DEFAULT_MAX_BYTES: Final = 64 * 1024 * 1024
MAX_BYTES_ENV: Final = "INFRAGRAPH_MAX_DOCUMENT_BYTES"

RESOURCE_KINDS: Final = (
    *("table", "column", "rule", "trigger", "view", "grant", "client_access"),
    *("command", "insight_selection", "public_read"),
)
COLUMN_TYPES = ("text", "number", "boolean", "date", "datetime", "select", "reference", "json")
# Kinds sharing the per-table `{table}.{ref}` space (grant's `grant:` form cannot collide).
TABLE_SPACE_KINDS: Final = frozenset(
    {"column", "rule", "trigger", "view", "public_read", "client_access"}
)

# Identities are bounded: they are stored in indexes (a btree row holds 2,704 bytes).
REF: Final = re.compile(r"[a-z][a-z0-9_]{0,127}")
COMMAND_REF: Final = re.compile(r"[a-z][a-z0-9_-]{0,127}")
SYSTEM: Final = re.compile(r"[a-z][a-z0-9_-]{0,127}")
PRINCIPAL: Final = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]{0,255}")
_UUID: Final = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")
_BOM: Final = b"\xef\xbb\xbf"


# --- results ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LineError:
    """One problem, located: line 0 means the whole document."""

    line: int
    kind: str | None
    ref: str | None
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "document"
        label = " ".join(part for part in (self.kind, self.ref) if part)
        return f"{where} ({label}): {self.message}" if label else f"{where}: {self.message}"


class DocumentError(ValueError):
    """The document is invalid; `errors` lists every problem, ordered by line."""

    def __init__(self, errors: Iterable[LineError]) -> None:
        self.errors: list[LineError] = sorted(errors, key=lambda e: e.line)
        shown = [str(e) for e in self.errors[:50]]
        if len(self.errors) > len(shown):
            shown.append(f"... and {len(self.errors) - len(shown)} more")
        count = len(self.errors)
        super().__init__(f"{count} error{'s' * (count != 1)} in document:\n" + "\n".join(shown))

    def as_dicts(self) -> list[dict[str, Any]]:
        """The errors as JSON-ready objects, for the API layers."""
        return [
            {"line": e.line, "kind": e.kind, "ref": e.ref, "message": e.message}
            for e in self.errors
        ]


def qualify(kind: str, ref: str | None, table: str | None = None) -> str:
    """The qualified ref of a resource, built from its parts (never split back)."""
    match kind:
        case "table":
            return f"{ref}"
        case "command":
            return f"command:{ref}"
        case "insight_selection":
            return f"insight.{ref}"
        case "client_access":
            return f"{table}.client_access"
        case "grant":
            return f"{table}.grant:{ref}"
        case "column" | "rule" | "trigger" | "view" | "public_read":
            return f"{table}.{ref}"
    raise ValueError(f"not a resource kind: {kind!r}")


@dataclass(frozen=True, slots=True)
class Line:
    """One resource declaration; `table` is the parent table ref (None for scope kinds)."""

    line: int
    kind: str
    ref: str | None
    qualified_ref: str
    table: str | None = None
    state: str = "present"
    spec: dict[str, Any] | None = None
    renamed_from: str | None = None
    chatroom: str | None = None
    tables: tuple[str, ...] | None = None
    view: str | None = None

    @property
    def absent(self) -> bool:
        return self.state == "absent"

    @property
    def previous_qualified_ref(self) -> str | None:
        """The qualified ref this line moves from (`renamed_from`), if any."""
        return qualify(self.kind, self.renamed_from, self.table) if self.renamed_from else None


@dataclass(frozen=True, slots=True)
class RecordLine:
    """A row to insert when its key is not found; `values` includes the key fields."""

    line: int
    table: str
    key: dict[str, Any]
    values: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Document:
    """A valid document: resource lines and records in document order."""

    system: str
    version: int
    lines: tuple[Line, ...]
    records: tuple[RecordLine, ...]
    undeclared_tables: tuple[str, ...] = ()


# --- field checks: (value, path, errors) -> None, appending messages ------------

Check = Callable[[Any, str, list[str]], None]

_JSON_TYPES: Final = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


def _jtype(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _show(value: Any) -> str:
    """A short JSON rendering of a value for messages."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


@functools.lru_cache(maxsize=8192)
def _matches(pattern: str, value: str) -> bool:
    """Refs repeat on many lines (table and column refs): match each one once. Keyed by the
    pattern's text: hashing a compiled pattern costs more than a match."""
    return re.fullmatch(pattern, value) is not None


def _any(value: Any, path: str, errors: list[str]) -> None:
    pass


def _expect(noun: str, *types: type) -> Check:
    def check(value: Any, path: str, errors: list[str]) -> None:
        if type(value) not in types:
            errors.append(f"{path} must be {noun}, got {_jtype(value)}")

    return check


def _pattern(regex: re.Pattern[str]) -> Check:
    def check(value: Any, path: str, errors: list[str]) -> None:
        if type(value) is not str:
            errors.append(f"{path} must be a string, got {_jtype(value)}")
        elif not _matches(regex.pattern, value):
            errors.append(f"{path} {_show(value)} must match {regex.pattern}")

    return check


def _one_of(*allowed: str) -> Check:
    def check(value: Any, path: str, errors: list[str]) -> None:
        if type(value) is not str or value not in allowed:
            errors.append(f"{path} must be one of {', '.join(allowed)}, got {_show(value)}")

    return check


def _name(value: Any, path: str, errors: list[str]) -> None:
    if type(value) is not str or not value.strip():
        errors.append(f"{path} must be a non-empty string, got {_show(value)}")


def _count(value: Any, path: str, errors: list[str]) -> None:
    if type(value) is not int or value < 0:
        errors.append(f"{path} must be a non-negative integer, got {_show(value)}")


def _list_of(item: Check, *, nonempty: bool = False) -> Check:
    def check(value: Any, path: str, errors: list[str]) -> None:
        if type(value) is not list:
            errors.append(f"{path} must be an array, got {_jtype(value)}")
            return
        if nonempty and not value:
            errors.append(f"{path} must not be empty")
        seen: set[str] = set()
        for i, entry in enumerate(value):
            item(entry, f"{path}[{i}]", errors)
            if type(entry) is str:
                if entry in seen:
                    errors.append(f"{path} lists {_show(entry)} twice")
                seen.add(entry)

    return check


def _check_fields(
    obj: dict[str, Any], schema: Mapping[str, Check], path: str, errors: list[str]
) -> None:
    """Run each field's check; name unknown fields (`path` prefixes nested ones)."""
    for key, value in obj.items():
        where = f"{path}.{key}" if path else key
        check = schema.get(key)
        if check is None:
            errors.append(f"unknown field {where} (allowed: {', '.join(sorted(schema))})")
        else:
            check(value, where, errors)


def _require(obj: dict[str, Any], names: tuple[str, ...], errors: list[str]) -> None:
    for name in names:
        if name not in obj:
            errors.append(f"missing field {name}")


def _object_of(schema: Mapping[str, Check]) -> Check:
    def check(value: Any, path: str, errors: list[str]) -> None:
        if type(value) is not dict:
            errors.append(f"{path} must be an object, got {_jtype(value)}")
        else:
            _check_fields(value, schema, path, errors)

    return check


_STR = _expect("a string", str)
_BOOL = _expect("a boolean", bool)
_OBJECT = _expect("an object", dict)
_TABLE_REF = _pattern(REF)

SPEC_CHECKS: Final[dict[str, dict[str, Check]]] = {
    "table": {"name": _name, "description": _STR, "settings": _OBJECT, "tags": _list_of(_name)},
    "column": {
        "name": _name,
        "type": _one_of(*COLUMN_TYPES),
        "required": _BOOL,
        "unique": _BOOL,
        "default": _any,
        "options": _object_of({"values": _list_of(_STR, nonempty=True), "target": _TABLE_REF}),
    },
    "rule": {"expression": _name, "message": _STR, "severity": _one_of("error", "warning", "info")},
    "trigger": {
        "event": _one_of("insert", "update", "delete"),
        "condition": _STR,
        "action": _OBJECT,
    },
    "view": {
        "name": _name,
        "columns": _list_of(_pattern(REF)),
        "filter": _expect("a string or an object", str, dict),
        "sort": _expect("a string, an array or an object", str, list, dict),
    },
    "grant": {
        "principal": _pattern(PRINCIPAL),
        "permissions": _list_of(_one_of("read", "write", "admin"), nonempty=True),
    },
    "client_access": {"enabled": _BOOL, "origins": _list_of(_name), "rate_limit": _count},
    "command": {"name": _name, "description": _STR, "action": _OBJECT},
}


# The value types each checked column type takes (besides null).
_VALUE_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "text": (str,),
    "number": (int, float),
    "boolean": (bool,),
    "date": (str,),
    "datetime": (str,),
    "select": (str,),
}


@dataclass(frozen=True, slots=True)
class _ValueRule:
    """How values are checked for one column spec: a value whose type is in `fits` is fine
    as it is; any other goes through `problem`. Built once per column, used per record."""

    fits: frozenset[type]
    problem: Callable[[Any], str | None]


def _no_problem(value: Any) -> None:
    return None


_ANY_VALUE_RULE: Final = _ValueRule(frozenset(_JSON_TYPES), _no_problem)


def _value_rule(column_spec: Mapping[str, Any]) -> _ValueRule:
    """The value check of a column with this (partial, maybe invalid) spec."""
    kind = column_spec.get("type")
    types = _VALUE_TYPES.get(kind) if type(kind) is str else None
    if types is None:
        return _ANY_VALUE_RULE
    options = column_spec.get("options")
    choices = options.get("values") if kind == "select" and isinstance(options, dict) else None
    choices = choices if isinstance(choices, list) else None

    def problem(value: Any) -> str | None:
        if value is None:
            return None
        if type(value) not in types:
            return f"must be a {kind} value, got {_jtype(value)}"
        try:
            if kind == "date":
                date.fromisoformat(value)
            elif kind == "datetime":
                datetime.fromisoformat(value)
        except ValueError:
            return f"must be an ISO 8601 {kind}, got {_show(value)}"
        if choices is not None and value not in choices:
            return f"{_show(value)} is not one of the select options.values"
        return None

    # A date must parse, a select value be an option: of those, only null fits unchecked.
    checked = kind in ("date", "datetime") or choices is not None
    return _ValueRule(frozenset((type(None), *(() if checked else types))), problem)


def _value_problem(column_spec: Mapping[str, Any], value: Any) -> str | None:
    """Why `value` cannot be stored in a column with this (partial) spec; None if it can."""
    return _value_rule(column_spec).problem(value)


def _table_spec_rules(spec: dict[str, Any], system: str | None, errors: list[str]) -> None:
    settings = spec.get("settings")
    if isinstance(settings, dict):
        errors.extend(
            f"settings.{key} is server-owned and cannot be set via IaC"
            for key in SERVER_OWNED_SETTINGS
            if key in settings
        )
        if "client_access" in settings:
            errors.append(
                "settings.client_access cannot be set in a table spec: "
                "declare a client_access line for the table"
            )
    tags = spec.get("tags")
    own = f"system:{system}"
    for tag in tags if isinstance(tags, list) else ():
        if isinstance(tag, str) and tag.startswith("system:") and tag != own:
            errors.append(f"spec.tags: {_show(tag)} is reserved for the system that manages it")


def _column_spec_rules(spec: dict[str, Any], system: str | None, errors: list[str]) -> None:
    kind = spec.get("type") if spec.get("type") in COLUMN_TYPES else None
    options = spec.get("options")
    if isinstance(options, dict):
        for key, only in (("values", "select"), ("target", "reference")):
            if key in options and kind not in (None, only):
                errors.append(f"spec.options.{key} is only for {only} columns, not {kind}")
    if "default" in spec and (problem := _value_problem(spec, spec["default"])):
        errors.append(f"spec.default {problem}")


_SPEC_RULES: Final[dict[str, Callable[[dict[str, Any], str | None, list[str]], None]]] = {
    "table": _table_spec_rules,
    "column": _column_spec_rules,
}


# --- the per-kind line schema ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Kind:
    """What a line of one kind may and must carry at top level."""

    fields: Mapping[str, Check]
    required: tuple[str, ...]
    spec: Check | None  # None: the kind takes no spec
    ref: re.Pattern[str] | None  # pattern of `ref`; None: the kind has no `ref` field
    in_table: bool


def _no_spec(value: Any, path: str, errors: list[str]) -> None:
    errors.append("spec is not allowed: this kind has no spec, only identity fields")


def _kind(
    name: str,
    *,
    ref: re.Pattern[str] | None = REF,
    in_table: bool = False,
    identity: Mapping[str, Check] | None = None,
) -> _Kind:
    """Derive a kind's top-level schema from its identity; renaming needs a ref."""
    fields: dict[str, Check] = {"kind": _any, "state": _one_of("present", "absent")}
    required = ["kind"]
    if in_table:
        fields["table"] = _TABLE_REF
        required.append("table")
    if ref is not None:
        fields["ref"] = fields["renamed_from"] = _pattern(ref)
        required.append("ref")
    spec_schema = SPEC_CHECKS.get(name)
    fields["spec"] = _no_spec if spec_schema is None else _any
    fields.update(identity or {})
    spec = None if spec_schema is None else _object_of(spec_schema)
    return _Kind(fields, tuple(required), spec, ref, in_table)


_KINDS: Final[dict[str, _Kind]] = {
    "table": _kind("table"),
    "column": _kind("column", in_table=True),
    "rule": _kind("rule", in_table=True),
    "trigger": _kind("trigger", in_table=True),
    "view": _kind("view", in_table=True),
    "grant": _kind("grant", ref=None, in_table=True, identity={"principal": _pattern(PRINCIPAL)}),
    "client_access": _kind("client_access", ref=None, in_table=True),
    "command": _kind("command", ref=COMMAND_REF),
    "insight_selection": _kind(
        "insight_selection",
        ref=None,
        identity={"chatroom": _pattern(_UUID), "tables": _list_of(_TABLE_REF, nonempty=True)},
    ),
    "public_read": _kind("public_read", in_table=True, identity={"view": _pattern(REF)}),
}
# The pattern of each kind's identity (`Line.ref`): its ref, principal or chatroom.
_IDENTITY: Final = {kind: rule.ref for kind, rule in _KINDS.items()} | {
    "grant": PRINCIPAL,
    "insight_selection": _UUID,
}
_HEADER_FIELDS: Final[dict[str, Check]] = {
    "kind": _any,
    "system": _pattern(SYSTEM),
    "version": _any,
}
_RECORD_FIELDS: Final[dict[str, Check]] = {
    "kind": _any,
    "table": _TABLE_REF,
    "key": _OBJECT,
    "values": _OBJECT,
}
_ALL_KINDS: Final = ("header", *RESOURCE_KINDS, "record")


# --- parsing ----------------------------------------------------------------------


def max_document_bytes() -> int:
    """The size limit from INFRAGRAPH_MAX_DOCUMENT_BYTES (read per call), default 64 MiB."""
    raw = os.environ.get(MAX_BYTES_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise ValueError(f"{MAX_BYTES_ENV} must be a positive integer, got {raw!r}")
    return value


def parse_document(
    data: bytes,
    *,
    max_bytes: int | None = None,
    strict_tables: bool = False,
    known_tables: frozenset[str] = frozenset(),
) -> Document:
    """Parse and validate a whole document; raise DocumentError listing every problem."""
    if isinstance(data, str):
        raise TypeError("parse_document takes the document's bytes, not str")
    limit = max_document_bytes() if max_bytes is None else max_bytes
    if len(data) > limit:
        raise DocumentError(
            [LineError(0, None, None, f"document is {len(data)} bytes, over the {limit} limit")]
        )
    with gc_paused():  # 100,000 lines make a million small objects, none cyclic
        return _Parser(strict_tables, known_tables).run(bytes(data))


def _fits(value: Any, pattern: re.Pattern[str] | None) -> bool:
    return isinstance(value, str) and pattern is not None and _matches(pattern.pattern, value)


def canonical(value: Any) -> bytes:
    """One spelling per JSON value, to compare values and record keys exactly."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # integers past 64 bits
        return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


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
            self._error(number, None, None, f"a line must be a JSON object, got {_jtype(obj)}")
            return None
        return obj

    def _line(self, number: int, obj: dict[str, Any], first: bool) -> None:
        kind = obj.get("kind")
        if type(kind) is not str or kind not in _ALL_KINDS:
            expected = ", ".join(_ALL_KINDS)
            message = "missing field kind" if kind is None else f"unknown kind {_show(kind)}"
            self._error(number, None, None, f"{message} (expected one of {expected})")
            return
        if first and kind != "header":
            self._error(
                number,
                kind,
                _label(kind, obj) if kind in _KINDS else None,
                "the first line must be the header: "
                '{"kind": "header", "system": ..., "version": 1}',
            )
        if kind == "header":
            self._header(number, obj, first)
        elif kind == "record":
            self._record(number, obj)
        elif kind in _KINDS:
            self._resource(number, obj, kind)

    def _header(self, number: int, obj: dict[str, Any], first: bool) -> None:
        errors: list[str] = []
        if not first:
            seen = f" (the header is on line {self.header_line})" if self.header_line else ""
            errors.append(f"the header must be the first line and appear once{seen}")
        _check_fields(obj, _HEADER_FIELDS, "", errors)
        _require(obj, ("system", "version"), errors)
        version = obj.get("version", 1)
        if type(version) is not int or version != 1:
            errors.append(f"version must be 1, got {_show(version)}")
        for message in errors:
            self._error(number, "header", None, message)
        if first:
            self.header_line = number
            system = obj.get("system")
            self.system = system if _fits(system, SYSTEM) else None

    def _resource(self, number: int, obj: dict[str, Any], kind: str) -> None:
        rule = _KINDS[kind]
        errors: list[str] = []
        _check_fields(obj, rule.fields, "", errors)
        _require(obj, rule.required, errors)
        state = obj.get("state", "present")
        absent = state == "absent"
        spec = obj.get("spec")
        if rule.spec is not None:
            if absent and "spec" in obj and kind != "table":
                errors.append("spec is not allowed with state absent (only a table may keep one)")
            elif not absent and "spec" not in obj:
                errors.append(f"missing field spec: a present {kind} needs a spec object")
            elif "spec" in obj:
                rule.spec(spec, "spec", errors)
                if isinstance(spec, dict) and kind in _SPEC_RULES:
                    _SPEC_RULES[kind](spec, self.system, errors)
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
                errors.append(f"principal {_show(top)} and spec.principal {_show(inner)} differ")
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
                    tables if tables and all(isinstance(t, str) for t in tables) else None,
                    view if isinstance(view, str) else None,
                )
            )

    @staticmethod
    def _identity_ok(
        rule: _Kind, kind: str, ref: Any, table: Any, state: Any, renamed: Any
    ) -> bool:
        """Whether the line's identity is sound enough to take part in cross-checks."""
        return (
            state in ("present", "absent")
            and (kind == "client_access" or _fits(ref, _IDENTITY[kind]))
            and (not rule.in_table or _fits(table, REF))
            and (renamed is None or (_fits(renamed, rule.ref) and renamed != ref))
        )

    def _record(self, number: int, obj: dict[str, Any]) -> None:
        errors: list[str] = []
        table, key, values = obj.get("table"), obj.get("key"), obj.get("values", {})
        table_ok = _fits(table, REF)
        # The field checks below find nothing on a well-formed record: skip them then.
        if not (
            obj.keys() <= _RECORD_FIELDS.keys()
            and table_ok
            and type(key) is dict
            and type(values) is dict
        ):
            _check_fields(obj, _RECORD_FIELDS, "", errors)
            _require(obj, ("table", "key"), errors)
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
            source, present, spec = (
                (line.line, line.kind, line.qualified_ref),
                not line.absent,
                line.spec,
            )
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
                    for source in used_tables[table]:
                        self._error(
                            *source,
                            f"table {table} is not declared in this document nor already managed",
                        )
        return tuple(undeclared)

    @staticmethod
    def _tables_used(line: Line) -> list[str]:
        """Table refs a line depends on: its parent, selected tables, a reference target."""
        used = [line.table] if line.table else []
        used += [t for t in line.tables or () if _fits(t, REF)]
        options = (line.spec or {}).get("options") if line.kind == "column" else None
        target = options.get("target") if isinstance(options, dict) else None
        if _fits(target, REF):
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
        is_column = target is not None and target.kind == "column"
        rule = _value_rule(target.spec or {}) if is_column else _ANY_VALUE_RULE
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
