"""The authored fields of each kind, and live resources seen in authored form (pure).

Desired values come from a document (refs); live ones from the catalog (IDs, column
keys). To compare them, live values are translated into refs through a `RefIndex`
(what the plan knows: IDs bound to refs of this system). An ID it does not know stays
an ID, which never equals a ref, so it shows as a difference.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.catalog.kinds import SERVER_OWNED_SETTINGS, system_tag
from app.iac.exactjson import canonical
from app.iac.model import Line
from app.iac.state import is_secret, seal_secrets
from app.secretnames import MASK

# The fields plan compares, per kind, in display order. A grant's principal, an insight
# selection's chatroom and a public read's ref are identity (in the ref), not fields.
FIELDS: dict[str, tuple[str, ...]] = {
    "table": ("name", "description", "settings", "tags"),
    "column": ("name", "type", "required", "unique", "default", "options"),
    "rule": ("expression", "message", "severity"),
    "trigger": ("event", "condition", "action"),
    "view": ("name", "columns", "filter", "sort"),
    "grant": ("permissions",),
    "client_access": ("enabled", "origins", "rate_limit"),
    "command": ("name", "description", "action"),
    "insight_selection": ("tables",),
    "public_read": ("view",),
}
# What creating one needs (the catalog's required fields, in authored terms).
REQUIRED_ON_CREATE: dict[str, tuple[str, ...]] = {
    "table": ("name",),
    "column": ("name", "type"),
    "rule": ("expression",),
    "trigger": ("event",),
    "command": ("name",),
}
# Table settings keys a document never manages: server-owned, or a kind of their own.
UNMANAGED_SETTINGS = (*SERVER_OWNED_SETTINGS, "client_access")
REDACTED = MASK


def column_key(column_id: str) -> str:
    """The key of a column (its values' key in records) from its ID `{table uuid}:{key}`."""
    return column_id.rsplit(":", 1)[1]


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values (exact: 1 and 1.0 differ as jsonb keeps them apart too)."""
    return a is b or canonical(a) == canonical(b)


def redact(value: Any) -> Any:
    """For display: secret values replaced, so a plan can be shown to anyone."""
    if isinstance(value, dict):
        return {k: REDACTED if is_secret(k) else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def desired_of(line: Line, system: str) -> dict[str, Any]:
    """The fields a present line declares, in authored form (only the provided ones)."""
    if line.kind == "insight_selection":
        return {"tables": list(line.tables or ())}
    if line.kind == "public_read":
        return {"view": line.view}  # identity: always given (None = the whole table)
    spec = dict(line.spec or {})
    spec.pop("principal", None)
    if line.kind == "table" and isinstance(spec.get("tags"), list):
        spec["tags"] = [t for t in spec["tags"] if t != system_tag(system)]
    return {name: spec[name] for name in FIELDS[line.kind] if name in spec}


def last_applied_of(desired: Mapping[str, Any], key: bytes) -> dict[str, Any]:
    """What state remembers of a declaration: its fields, secrets as keyed hashes."""
    sealed: dict[str, Any] = seal_secrets(dict(desired), key)
    return sealed


@dataclass
class RefIndex:
    """IDs of live resources -> their refs, as far as this system knows them."""

    tables: dict[str, str] = field(default_factory=dict)  # table ID -> table ref
    columns: dict[str, str] = field(default_factory=dict)  # column ID -> column ref (local)
    views: dict[str, str] = field(default_factory=dict)  # view ID -> view ref (local)

    def table(self, table_id: str) -> str:
        return self.tables.get(table_id, table_id)

    def column(self, column_id: str) -> str:
        return self.columns.get(column_id, column_id)

    def view(self, view_id: str | None) -> str | None:
        return None if view_id is None else self.views.get(view_id, view_id)


def live_options(options: Mapping[str, Any], refs: RefIndex) -> dict[str, Any]:
    """A column's options in authored form: the reference target as a table ref."""
    out = {k: v for k, v in options.items() if k != "table"}
    if "table" in options:
        out["target"] = refs.table(options["table"])
    return out


def authored_live(
    kind: str, live: Mapping[str, Any], refs: RefIndex, system: str
) -> dict[str, Any]:
    """Every field of a live resource, as a document would write it."""
    if kind == "table":
        return {
            "name": live["name"],
            "description": live["description"],
            "settings": {k: v for k, v in live["settings"].items() if k not in UNMANAGED_SETTINGS},
            "tags": [t for t in live["tags"] if t != system_tag(system)],
        }
    out = {name: live.get(name) for name in FIELDS[kind]}
    if kind == "column":
        out["options"] = live_options(live["options"] or {}, refs)
    elif kind == "view":
        out["columns"] = [refs.column(c) for c in live["columns"]]
    elif kind == "insight_selection":
        out["tables"] = [refs.table(t) for t in live["tables"]]
    elif kind == "public_read":
        out["view"] = refs.view(live["view"])
    return out
