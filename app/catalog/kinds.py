"""The catalog's kinds: each one's SQL table, parent, and authored fields (validator,
default, required). One declaration drives the generic SQL in store.py; what differs
between kinds beyond fields (column keys, column_mapping, cross-row checks) is code
in tables.py, columns.py and resources.py."""

import copy
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.catalog import schema as s
from app.errors import BadInput


class ColumnType(enum.Enum):
    TEXT = "text"
    NUMBER = "number"
    BOOLEAN = "boolean"
    DATE = "date"
    DATETIME = "datetime"
    SELECT = "select"
    REFERENCE = "reference"
    JSON = "json"


class Permission(enum.Enum):
    READ = "read"
    WRITE = "write"
    ADMIN = "admin"


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class TriggerEvent(enum.Enum):
    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"


COLUMN_TYPES = tuple(t.value for t in ColumnType)
PERMISSIONS = tuple(p.value for p in Permission)
SEVERITIES = tuple(s.value for s in Severity)
TRIGGER_EVENTS = tuple(e.value for e in TriggerEvent)
# Keys of table settings that only the server writes (iac.md, "Server-owned fields").
SERVER_OWNED_SETTINGS = ("column_mapping", "iac")
# A table managed by IaC system S carries the tag `system:S` (iac.md, "Tags").
SYSTEM_TAG_PREFIX = "system:"


def system_tag(system: str) -> str:
    return f"{SYSTEM_TAG_PREFIX}{system}"


@dataclass(frozen=True)
class Field:
    """One authored field: `type` as the catalog API takes it; `authored`, where a document
    writes it differently (a reference: a ref where the API takes an ID)."""

    type: s.Type
    default: Any = None
    required: bool = False
    authored_type: s.Type | None = None

    @property
    def authored(self) -> s.Type:
        return self.authored_type or self.type


@dataclass(frozen=True)
class Kind:
    name: str
    table: str  # its SQL table
    parent: str | None  # the parent's column: "scope_id", "table_id", or None (scopes)
    fields: Mapping[str, Field]
    # unique constraint -> Conflict message, formatted with the written values
    conflicts: Mapping[str, str] = field(default_factory=dict)

    @property
    def parent_column(self) -> str:
        """`parent`, for a kind that has one (every kind but scope)."""
        if self.parent is None:
            raise ValueError(f"a {self.name} has no parent")
        return self.parent


def _req(field_type: s.Type) -> Field:
    return Field(field_type, required=True)


def _settings(why: str) -> s.Type:
    return s.without("settings", SERVER_OWNED_SETTINGS, f"is server-owned and cannot be set{why}")


def _options(reference_key: str, target: s.Type) -> s.Type:
    """A column's options: a select's values; a reference's target table, which the API
    names by ID under `table` and a document by ref under `target`."""
    return s.object_of({"values": s.list_of(s.TEXT, nonempty=True), reference_key: target})


_TABLE_REFS = s.list_of(s.pattern(s.REF))

SCOPE = Kind(
    "scope",
    "scopes",
    None,
    {"slug": _req(s.pattern(s.SLUG)), "name": _req(s.TEXT)},
    {"scopes_slug_key": "a scope with slug {slug!r} already exists"},
)
TABLE = Kind(
    "table",
    "tables",
    "scope_id",
    {
        "name": _req(s.TEXT),
        "description": Field(s.nullable(s.STRING)),
        "settings": Field(_settings(""), {}, authored_type=_settings(" via IaC")),
        "tags": Field(s.list_of(s.TEXT), []),
    },
)
COLUMN = Kind(
    "column",
    "columns",
    "table_id",
    {
        "name": _req(s.TEXT),
        "type": _req(s.one_of(*COLUMN_TYPES)),
        "required": Field(s.BOOLEAN, False),
        "unique": Field(s.BOOLEAN, False),
        "default": Field(s.ANY),
        "options": Field(
            _options("table", s.UUID_TEXT), {}, authored_type=_options("target", s.pattern(s.REF))
        ),
    },
    {"columns_name_key": "this table already has a column named {name!r}"},
)
RULE = Kind(
    "rule",
    "rules",
    "table_id",
    {
        "expression": _req(s.TEXT),
        "message": Field(s.nullable(s.STRING)),
        "severity": Field(s.one_of(*SEVERITIES), "error"),
    },
)
TRIGGER = Kind(
    "trigger",
    "triggers",
    "table_id",
    {
        "event": _req(s.one_of(*TRIGGER_EVENTS)),
        "condition": Field(s.nullable(s.STRING)),
        "action": Field(s.OBJECT, {}),
    },
)
VIEW = Kind(
    "view",
    "views",
    "table_id",
    {
        "name": Field(s.nullable(s.TEXT)),
        # column IDs or keys in (stored as keys); refs in a document
        "columns": Field(s.list_of(s.TEXT), [], authored_type=s.list_of(s.pattern(s.REF))),
        "filter": Field(s.nullable(s.expect("a string or an object", str, dict))),
        "sort": Field(s.nullable(s.expect("a string, an array or an object", str, list, dict))),
    },
)
GRANT = Kind(
    "grant",
    "grants",
    "table_id",
    {
        "principal": _req(s.pattern(s.PRINCIPAL)),
        "permissions": Field(s.list_of(s.one_of(*PERMISSIONS), nonempty=True), ["read"]),
    },
    {"grants_principal_key": "this table already has a grant for {principal!r}"},
)
CLIENT_ACCESS = Kind(
    "client_access",
    "client_access",
    "table_id",
    {
        "enabled": Field(s.BOOLEAN, True),
        "origins": Field(s.list_of(s.TEXT), []),
        "rate_limit": Field(s.nullable(s.COUNT)),
    },
    {"client_access_table_key": "this table already has client access"},
)
COMMAND = Kind(
    "command",
    "commands",
    "scope_id",
    {
        "name": _req(s.TEXT),
        "description": Field(s.nullable(s.STRING)),
        "action": Field(s.OBJECT, {}),
    },
)
INSIGHT_SELECTION = Kind(
    "insight_selection",
    "insight_selections",
    "scope_id",
    {
        "chatroom": _req(s.UUID_TEXT),
        "tables": Field(s.list_of(s.UUID_TEXT), [], authored_type=_TABLE_REFS),
    },
    {
        "insight_selections_chatroom_key": (
            "this scope already has an insight selection for chatroom {chatroom}"
        )
    },
)
PUBLIC_READ = Kind(
    "public_read",
    "public_reads",
    "table_id",
    {
        "ref": _req(s.pattern(s.REF)),
        "view": Field(s.nullable(s.UUID_TEXT), authored_type=s.nullable(s.pattern(s.REF))),
    },
    {"public_reads_ref_key": "this table already has a public read {ref!r}"},
)

# The ten kinds of live resources, in dependency order (what a snapshot lists first).
RESOURCE_KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        TABLE,
        COLUMN,
        RULE,
        TRIGGER,
        VIEW,
        GRANT,
        CLIENT_ACCESS,
        COMMAND,
        INSIGHT_SELECTION,
        PUBLIC_READ,
    )
}


def kind_of(name: str) -> Kind:
    try:
        return RESOURCE_KINDS[name]
    except KeyError:
        raise BadInput(f"unknown resource kind {name!r}") from None


def checked(field_type: s.Type, value: Any, path: str, name: str) -> Any:
    """`value` as stored, or BadInput naming the field."""
    try:
        return field_type.check(value, path, s.Problems(collect=False))
    except s.Invalid as exc:
        raise BadInput(str(exc), {"field": name}) from None


def validate(kind: Kind, spec: Mapping[str, Any], *, partial: bool) -> dict[str, Any]:
    """The checked values of `spec`. Whole (partial=False): required fields must be there
    and absent ones take their default. Partial (an update): only the given fields."""
    if not isinstance(spec, Mapping):
        raise BadInput(f"{kind.name}: expected an object of fields")
    unknown = sorted(set(spec) - set(kind.fields))
    if unknown:
        raise BadInput(
            f"unknown {kind.name} field(s): {', '.join(unknown)}",
            {"fields": unknown, "known": list(kind.fields)},
        )
    values: dict[str, Any] = {}
    for name, spec_field in kind.fields.items():
        if name in spec:
            values[name] = checked(spec_field.type, spec[name], f"{kind.name}.{name}", name)
        elif not partial:
            if spec_field.required:
                raise BadInput(f"{kind.name}.{name} is required", {"field": name})
            values[name] = copy.deepcopy(spec_field.default)
    return values
