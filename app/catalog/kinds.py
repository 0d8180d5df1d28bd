"""The catalog's kinds: each one's SQL table, parent, and authored fields (validator,
default, required). One declaration drives the generic SQL in store.py; what differs
between kinds beyond fields (column keys, column_mapping, cross-row checks) is code
in tables.py, columns.py and resources.py."""

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.catalog import fields as f
from app.errors import BadInput

COLUMN_TYPES = ("text", "number", "boolean", "date", "datetime", "select", "reference", "json")
PERMISSIONS = ("read", "write", "admin")
SEVERITIES = ("error", "warning", "info")
TRIGGER_EVENTS = ("insert", "update", "delete")
# Keys of table settings that only the server writes (iac.md, "Server-owned fields").
SERVER_OWNED_SETTINGS = ("column_mapping", "iac")


@dataclass(frozen=True)
class Field:
    check: f.Check
    default: Any = None
    required: bool = False


@dataclass(frozen=True)
class Kind:
    name: str
    table: str  # its SQL table
    parent: str | None  # the parent's column: "scope_id", "table_id", or None (scopes)
    fields: Mapping[str, Field]
    # unique constraint -> Conflict message, formatted with the written values
    conflicts: Mapping[str, str] = field(default_factory=dict)


def _settings(value: Any) -> dict[str, Any]:
    settings = f.obj(value)
    for key in SERVER_OWNED_SETTINGS:
        if key in settings:
            raise BadInput(f"settings.{key} is server-owned and cannot be set", {"field": key})
    return settings


def _req(check: f.Check) -> Field:
    return Field(check, required=True)


SCOPE = Kind(
    "scope",
    "scopes",
    None,
    {"slug": _req(f.slug), "name": _req(f.text)},
    {"scopes_slug_key": "a scope with slug {slug!r} already exists"},
)
TABLE = Kind(
    "table",
    "tables",
    "scope_id",
    {
        "name": _req(f.text),
        "description": Field(f.optional_text),
        "settings": Field(_settings, {}),
        "tags": Field(f.list_of(f.text), []),
    },
)
COLUMN = Kind(
    "column",
    "columns",
    "table_id",
    {
        "name": _req(f.text),
        "type": _req(f.one_of(*COLUMN_TYPES)),
        "required": Field(f.boolean, False),
        "unique": Field(f.boolean, False),
        "default": Field(f.any_json),
        "options": Field(f.obj, {}),
    },
    {"columns_name_key": "this table already has a column named {name!r}"},
)
RULE = Kind(
    "rule",
    "rules",
    "table_id",
    {
        "expression": _req(f.text),
        "message": Field(f.optional_text),
        "severity": Field(f.one_of(*SEVERITIES), "error"),
    },
)
TRIGGER = Kind(
    "trigger",
    "triggers",
    "table_id",
    {
        "event": _req(f.one_of(*TRIGGER_EVENTS)),
        "condition": Field(f.optional_text),
        "action": Field(f.obj, {}),
    },
)
VIEW = Kind(
    "view",
    "views",
    "table_id",
    {
        "name": Field(f.optional_text),
        "columns": Field(f.list_of(f.text), []),  # column IDs or keys in; stored as keys
        "filter": Field(f.any_json),
        "sort": Field(f.any_json),
    },
)
GRANT = Kind(
    "grant",
    "grants",
    "table_id",
    {
        "principal": _req(f.text),
        "permissions": Field(f.list_of(f.one_of(*PERMISSIONS), non_empty=True), ["read"]),
    },
    {"grants_principal_key": "this table already has a grant for {principal!r}"},
)
CLIENT_ACCESS = Kind(
    "client_access",
    "client_access",
    "table_id",
    {
        "enabled": Field(f.boolean, True),
        "origins": Field(f.list_of(f.text), []),
        "rate_limit": Field(f.count),
    },
    {"client_access_table_key": "this table already has client access"},
)
COMMAND = Kind(
    "command",
    "commands",
    "scope_id",
    {
        "name": _req(f.text),
        "description": Field(f.optional_text),
        "action": Field(f.obj, {}),
    },
)
INSIGHT_SELECTION = Kind(
    "insight_selection",
    "insight_selections",
    "scope_id",
    {"chatroom": _req(f.uuid_text), "tables": Field(f.list_of(f.uuid_text), [])},
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
    {"ref": _req(f.ref), "view": Field(f.optional_uuid)},
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
KINDS: dict[str, Kind] = {"scope": SCOPE, **RESOURCE_KINDS}


def kind_of(name: str) -> Kind:
    try:
        return RESOURCE_KINDS[name]
    except KeyError:
        raise BadInput(f"unknown resource kind {name!r}") from None


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
            try:
                values[name] = spec_field.check(spec[name])
            except ValueError as exc:
                raise BadInput(f"{kind.name}.{name}: {exc}", {"field": name}) from None
        elif not partial:
            if spec_field.required:
                raise BadInput(f"{kind.name}.{name} is required", {"field": name})
            values[name] = copy.deepcopy(spec_field.default)
    return values
