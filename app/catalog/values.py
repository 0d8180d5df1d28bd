"""Record values against their column's type (pure), for the catalog and for documents.

Decided: a date or datetime is an ISO 8601 string (what date/datetime.fromisoformat
read), kept as written; a select value is one of options.values; a reference is the
UUID (string) of a record of the table options.table names (its existence is checked
by records.py at write time; deleting that record later leaves the value dangling).
A document writes a reference value as the referenced record's key instead (any JSON
here: apply resolves it), so `authored` rules leave references unchecked.
"""

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Final

from app.catalog import schema as s
from app.errors import BadInput

# The value types each checked column type takes (besides null).
_VALUE_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "text": (str,),
    "number": (int, float),
    "boolean": (bool,),
    "date": (str,),
    "datetime": (str,),
    "select": (str,),
    "reference": (str,),
}
_PARSE: Final[dict[str, Callable[[str], Any]]] = {
    "date": date.fromisoformat,
    "datetime": datetime.fromisoformat,
    "reference": uuid.UUID,
}


@dataclass(frozen=True, slots=True)
class ValueRule:
    """How values are checked for one column: a value whose type is in `fits` is fine as
    it is; any other goes through `problem` (None: fine). Built once per column."""

    fits: frozenset[type]
    problem: Callable[[Any], str | None]


def _no_problem(value: Any) -> None:
    return None


ANY_VALUE: Final = ValueRule(frozenset(s.JSON_TYPES), _no_problem)


def value_rule(column: Mapping[str, Any], *, authored: bool) -> ValueRule:
    """The value check of a column with this (maybe partial, maybe invalid) definition;
    `authored`: as a document writes values (references by key)."""
    kind = column.get("type")
    types = _VALUE_TYPES.get(kind) if isinstance(kind, str) else None
    if not isinstance(kind, str) or types is None or (authored and kind == "reference"):
        return ANY_VALUE
    options = column.get("options")
    choices = options.get("values") if kind == "select" and isinstance(options, dict) else None
    choices = choices if isinstance(choices, list) else None
    parse = _PARSE.get(kind)

    def problem(value: Any) -> str | None:
        if value is None:
            return None
        if type(value) not in types:
            return f"must be a {kind} value, got {s.json_type(value)}"
        if parse is not None:
            try:
                parse(value)
            except ValueError:
                noun = "a record ID (UUID)" if kind == "reference" else f"an ISO 8601 {kind}"
                return f"must be {noun}, got {s.show(value)}"
        if choices is not None and value not in choices:
            return f"{s.show(value)} is not one of the select options.values"
        return None

    # A date must parse, a select value be an option: of those, only null fits unchecked.
    checked = parse is not None or choices is not None
    return ValueRule(frozenset((type(None), *(() if checked else types))), problem)


def default_problem(column: Mapping[str, Any], *, authored: bool) -> str | None:
    """Why a column (maybe partial) cannot have its `default`; None if it can."""
    default = column.get("default")
    if default is not None and column.get("type") == "reference":
        return "a reference column takes no default"
    return value_rule(column, authored=authored).problem(default)


def check_value(column: Mapping[str, Any], value: Any) -> Any:
    """`value` as stored for `column` (references in canonical UUID form), or ValueError."""
    if problem := value_rule(column, authored=False).problem(value):
        raise ValueError(problem)
    return str(uuid.UUID(value)) if column["type"] == "reference" else value


def check_definition(column: Mapping[str, Any]) -> dict[str, Any]:
    """The column's options, checked against its type and default: select needs
    options.values, reference needs options.table (made canonical here; columns.py
    checks it is in the same scope) and takes no default."""
    options = dict(column["options"])
    needed = {"select": "values", "reference": "table"}.get(column["type"])
    if needed is not None and needed not in options:
        raise BadInput(
            f"column.options.{needed} is missing: a {column['type']} column needs it",
            {"field": "options"},
        )
    if problem := default_problem(column, authored=False):
        raise BadInput(f"column.default {problem}", {"field": "default"})
    return options
