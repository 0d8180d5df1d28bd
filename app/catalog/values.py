"""Record values against their column's type (pure).

Decided: a date or datetime is an ISO 8601 string (what date/datetime.fromisoformat
read), kept as written; a select value is one of options.values; a reference is the
UUID (string) of a record of the table options.table names (its existence is checked
by records.py at write time; deleting that record later leaves the value dangling).
"""

import uuid
from collections.abc import Callable, Mapping
from datetime import date, datetime
from typing import Any

from app.catalog import fields as f
from app.errors import BadInput


def _parses(parse: Callable[[str], Any]) -> Callable[[Any], bool]:
    """Whether a value is a string that `parse` reads."""

    def ok(value: Any) -> bool:
        if not isinstance(value, str):
            return False
        try:
            parse(value)
        except ValueError:
            return False
        return True

    return ok


_TYPES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "text": ("a string", lambda v: isinstance(v, str)),
    "number": ("a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool)),
    "boolean": ("true or false", lambda v: isinstance(v, bool)),
    "date": ("an ISO date (YYYY-MM-DD)", _parses(date.fromisoformat)),
    "datetime": ("an ISO datetime", _parses(datetime.fromisoformat)),
    "reference": ("a record ID (UUID string)", _parses(uuid.UUID)),
    "json": ("any JSON value", lambda v: True),
}


def check_value(column: Mapping[str, Any], value: Any) -> Any:
    """`value` as stored for `column` (references in canonical UUID form), or ValueError."""
    kind = column["type"]
    if kind == "select":
        choices = column["options"].get("values", [])
        if value not in choices or not isinstance(value, str):
            raise ValueError(f"expected one of {', '.join(map(repr, choices))}, got {value!r}")
        return value
    expected, ok = _TYPES[kind]
    if not ok(value):
        raise ValueError(f"expected {expected}, got {f.shown(value)}")
    return str(uuid.UUID(value)) if kind == "reference" else value


def check_definition(column: Mapping[str, Any]) -> dict[str, Any]:
    """The column's options, checked against its type and default: select needs
    options.values (distinct strings), reference needs options.table (a table ID, made
    canonical here; columns.py checks it is in the same scope) and takes no default."""
    options = dict(column["options"])
    try:
        if column["type"] == "select":
            f.list_of(f.text, non_empty=True)(options.get("values"))
        if column["type"] == "reference":
            options["table"] = f.uuid_text(options.get("table"))
    except ValueError as exc:
        key = "values" if column["type"] == "select" else "table"
        raise BadInput(
            f"column.options.{key}: {exc} (a {column['type']} column needs it)",
            {"field": "options"},
        ) from None
    if column["default"] is None:
        return options
    if column["type"] == "reference":
        raise BadInput("column.default: a reference column takes no default", {"field": "default"})
    try:
        check_value(column, column["default"])
    except ValueError as exc:
        raise BadInput(f"column.default: {exc}", {"field": "default"}) from None
    return options
