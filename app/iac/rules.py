"""What each line of a document may and must carry (pure), derived from the catalog's
kinds: a kind's spec fields are its fields in authored form (app/catalog/kinds.py),
so a document accepts exactly what the catalog will. insight_selection and public_read
have no spec: their fields are identity, written at top level.

What only documents have is here: the line envelope (kind, state, table, ref,
renamed_from), header and record lines, and the rules iac.md adds to specs (a table's
settings.client_access is its own line kind; `system:` tags belong to the system that
manages the table; a column's options.values / options.target only go with select /
reference).
"""

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeGuard

from app.catalog import schema as s
from app.catalog.kinds import RESOURCE_KINDS, SYSTEM_TAG_PREFIX, system_tag
from app.catalog.schema import PRINCIPAL, REF, UUID
from app.catalog.values import default_problem

COMMAND_REF: Final = re.compile(r"[a-z][a-z0-9_-]*")
SYSTEM: Final = re.compile(r"[a-z][a-z0-9_-]*")
IDENTITY_KINDS: Final = frozenset({"insight_selection", "public_read"})
COLUMN_OPTIONS_OF_TYPE: Final = {"values": "select", "target": "reference"}

# Each kind's spec fields as a document writes them.
SPEC_FIELDS: Final[dict[str, dict[str, s.Type]]] = {
    name: {field_name: f.authored for field_name, f in kind.fields.items()}
    for name, kind in RESOURCE_KINDS.items()
    if name not in IDENTITY_KINDS
}


def fits(value: Any, pattern: re.Pattern[str] | None) -> TypeGuard[str]:
    return isinstance(value, str) and pattern is not None and s.matches(pattern.pattern, value)


def _table_spec_rules(spec: dict[str, Any], system: str | None, errors: list[str]) -> None:
    settings = spec.get("settings")
    if isinstance(settings, dict) and "client_access" in settings:
        errors.append(
            "settings.client_access cannot be set in a table spec: "
            "declare a client_access line for the table"
        )
    tags = spec.get("tags")
    own = system_tag(system or "")
    for tag in tags if isinstance(tags, list) else ():
        if isinstance(tag, str) and tag.startswith(SYSTEM_TAG_PREFIX) and tag != own:
            errors.append(f"spec.tags: {s.show(tag)} is reserved for the system that manages it")


def _column_spec_rules(spec: dict[str, Any], system: str | None, errors: list[str]) -> None:
    kind = spec.get("type") if isinstance(spec.get("type"), str) else None
    options = spec.get("options")
    if isinstance(options, dict):
        for key, only in COLUMN_OPTIONS_OF_TYPE.items():
            if key in options and kind not in (None, only):
                errors.append(f"spec.options.{key} is only for {only} columns, not {kind}")
    if problem := default_problem(spec, authored=True):
        errors.append(f"spec.default {problem}")


# Rules across a spec's fields, beyond each field's own (kind -> rules).
SPEC_RULES: Final[dict[str, Callable[[dict[str, Any], str | None, list[str]], None]]] = {
    "table": _table_spec_rules,
    "column": _column_spec_rules,
}


@dataclass(frozen=True, slots=True)
class LineRule:
    """What a line of one kind may and must carry at top level."""

    fields: Mapping[str, s.Type]
    required: tuple[str, ...]
    spec: s.Type | None  # None: the kind takes no spec
    ref: re.Pattern[str] | None  # pattern of `ref`; None: the kind has no `ref` field
    identity: re.Pattern[str] | None  # pattern of the line's identity (`Line.ref`)
    in_table: bool


def _no_spec(value: Any, path: str, problems: s.Problems) -> Any:
    problems.add(path, "spec is not allowed: this kind has no spec, only identity fields")
    return value


_STATE: Final = s.one_of("present", "absent")


def _line_rule(
    name: str,
    *,
    ref: re.Pattern[str] | None = REF,
    identity: re.Pattern[str] | None = None,
    top_level: tuple[str, ...] = (),
) -> LineRule:
    """A kind's top-level rule from its identity; renaming needs a ref. `top_level`: the
    catalog fields written beside `kind` (identity) rather than in a spec."""
    kind = RESOURCE_KINDS[name]
    in_table = kind.parent == "table_id"
    fields: dict[str, s.Type] = {"kind": s.ANY, "state": _STATE}
    required = ["kind"]
    if in_table:
        fields["table"] = s.pattern(REF)
        required.append("table")
    if ref is not None:
        fields["ref"] = fields["renamed_from"] = s.pattern(ref)
        required.append("ref")
    spec_fields = SPEC_FIELDS.get(name)
    fields["spec"] = s.Type(_no_spec, {}) if spec_fields is None else s.ANY
    fields.update({field: kind.fields[field].authored for field in top_level})
    spec = None if spec_fields is None else s.object_of(spec_fields)
    return LineRule(fields, tuple(required), spec, ref, identity or ref, in_table)


LINE_RULES: Final[dict[str, LineRule]] = {
    "table": _line_rule("table"),
    "column": _line_rule("column"),
    "rule": _line_rule("rule"),
    "trigger": _line_rule("trigger"),
    "view": _line_rule("view"),
    "grant": _line_rule("grant", ref=None, identity=PRINCIPAL, top_level=("principal",)),
    "client_access": _line_rule("client_access", ref=None),
    "command": _line_rule("command", ref=COMMAND_REF),
    "insight_selection": _line_rule(
        "insight_selection", ref=None, identity=UUID, top_level=("chatroom", "tables")
    ),
    # its `ref` is a catalog field too: the same pattern (the agreement test holds them)
    "public_read": _line_rule("public_read", top_level=("view",)),
}
HEADER_FIELDS: Final[dict[str, s.Type]] = {
    "kind": s.ANY,
    "system": s.pattern(SYSTEM),
    "version": s.ANY,
}
RECORD_FIELDS: Final[dict[str, s.Type]] = {
    "kind": s.ANY,
    "table": s.pattern(REF),
    "key": s.OBJECT,
    "values": s.OBJECT,
}
