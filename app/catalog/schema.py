"""The vocabulary the kinds' fields are declared in (kinds.py), for two readers.

A `Type` checks one value and says the same thing as JSON Schema. Its check takes
(value, path, problems) and returns the value as stored (UUIDs made lowercase, the
rest as given); it reports through `Problems`, which either raises the first
message (the catalog API stops there) or collects them all (an IaC document lists
every problem). The catalog and the document read the same Type of a field, so they
cannot disagree about it; only references differ in form (an ID live, a ref in a
document), and kinds.py names both forms of those fields side by side.
"""

import functools
import json
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

# A ref: a table's key in a document, a local name in a table's `{table}.{ref}` space
# (column, rule, trigger, view, public_read): no `.` or `:`, so qualified refs split one way.
REF: Final = re.compile(r"[a-z][a-z0-9_]*")
# A grant's principal, part of its qualified ref `{table}.grant:{principal}`.
PRINCIPAL: Final = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]*")
UUID: Final = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")
SLUG: Final = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")

JSON_TYPES: Final = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


class Invalid(ValueError):
    """A value a field does not accept; `path` names the field."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


class Problems:
    """Where checks report: raised at the first (collect=False) or all kept in `messages`."""

    __slots__ = ("collect", "messages")

    def __init__(self, *, collect: bool) -> None:
        self.collect = collect
        self.messages: list[str] = []

    def add(self, path: str, message: str) -> None:
        """`message` is whole: it names `path` itself."""
        if not self.collect:
            raise Invalid(path, message)
        self.messages.append(message)


CheckFn = Callable[[Any, str, Problems], Any]


@dataclass(frozen=True, slots=True)
class Type:
    """What a field accepts: `check` (see the module docstring) and its JSON Schema."""

    check: CheckFn
    schema: Mapping[str, Any]


def json_type(value: Any) -> str:
    """The JSON name of a value's type, for messages."""
    return JSON_TYPES.get(type(value), type(value).__name__)


def show(value: Any) -> str:
    """A short JSON rendering of a value, for messages."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


@functools.lru_cache(maxsize=8192)
def matches(pattern: str, value: str) -> bool:
    """Refs repeat on many lines (table and column refs): match each one once. Keyed by the
    pattern's text: hashing a compiled pattern costs more than a match."""
    return re.fullmatch(pattern, value) is not None


def _any(value: Any, path: str, problems: Problems) -> Any:
    return value


ANY: Final = Type(_any, {})


def expect(noun: str, *types: type) -> Type:
    """Values of these Python types (as JSON decodes them; a bool is not a number)."""

    def check(value: Any, path: str, problems: Problems) -> Any:
        if type(value) not in types:
            problems.add(path, f"{path} must be {noun}, got {json_type(value)}")
        return value

    names = sorted({JSON_TYPES[t] for t in types})
    return Type(check, {"type": names[0] if len(names) == 1 else names})


STRING: Final = expect("a string", str)
BOOLEAN: Final = expect("a boolean", bool)
OBJECT: Final = expect("an object", dict)


def _text(value: Any, path: str, problems: Problems) -> Any:
    if type(value) is not str or not value.strip():
        problems.add(path, f"{path} must be a non-empty string, got {show(value)}")
    return value


TEXT: Final = Type(_text, {"type": "string", "pattern": r"\S"})


def _count(value: Any, path: str, problems: Problems) -> Any:
    if type(value) is not int or value < 0:
        problems.add(path, f"{path} must be a non-negative integer, got {show(value)}")
    return value


COUNT: Final = Type(_count, {"type": "integer", "minimum": 0})


def pattern(regex: re.Pattern[str]) -> Type:
    def check(value: Any, path: str, problems: Problems) -> Any:
        if type(value) is not str:
            problems.add(path, f"{path} must be a string, got {json_type(value)}")
        elif not matches(regex.pattern, value):
            problems.add(path, f"{path} {show(value)} must match {regex.pattern}")
        return value

    return Type(check, {"type": "string", "pattern": f"^{regex.pattern}$"})


def _uuid(value: Any, path: str, problems: Problems) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    if type(value) is not str or not matches(UUID.pattern, value):
        problems.add(path, f"{path} must be a UUID (8-4-4-4-12 hex digits), got {show(value)}")
        return value
    return value.lower()


UUID_TEXT: Final = Type(_uuid, {"type": "string", "pattern": f"^{UUID.pattern}$"})


def one_of(*choices: str) -> Type:
    def check(value: Any, path: str, problems: Problems) -> Any:
        if type(value) is not str or value not in choices:
            problems.add(path, f"{path} must be one of {', '.join(choices)}, got {show(value)}")
        return value

    return Type(check, {"enum": list(choices)})


def nullable(inner: Type) -> Type:
    def check(value: Any, path: str, problems: Problems) -> Any:
        return None if value is None else inner.check(value, path, problems)

    return Type(check, {"anyOf": [{"type": "null"}, inner.schema]})


def list_of(item: Type, *, nonempty: bool = False) -> Type:
    """A list of distinct items, in the author's order."""

    def check(value: Any, path: str, problems: Problems) -> Any:
        if type(value) is not list:
            problems.add(path, f"{path} must be an array, got {json_type(value)}")
            return value
        if nonempty and not value:
            problems.add(path, f"{path} must not be empty")
        seen: set[str] = set()
        items = []
        for i, entry in enumerate(value):
            items.append(item.check(entry, f"{path}[{i}]", problems))
            if type(entry) is str:
                if entry in seen:
                    problems.add(path, f"{path} lists {show(entry)} twice")
                seen.add(entry)
        return items

    schema = {"type": "array", "items": item.schema, "uniqueItems": True}
    return Type(check, schema | ({"minItems": 1} if nonempty else {}))


def check_fields(
    obj: Mapping[str, Any], fields: Mapping[str, Type], path: str, problems: Problems
) -> dict[str, Any]:
    """Each field's check (unknown fields named; `path` prefixes nested ones); the values
    as stored."""
    values = {}
    for key, value in obj.items():
        where = f"{path}.{key}" if path else key
        field_type = fields.get(key)
        if field_type is None:
            problems.add(where, f"unknown field {where} (allowed: {', '.join(sorted(fields))})")
        else:
            values[key] = field_type.check(value, where, problems)
    return values


def object_of(fields: Mapping[str, Type]) -> Type:
    """An object of these (optional) fields and no others."""

    def check(value: Any, path: str, problems: Problems) -> Any:
        if type(value) is not dict:
            problems.add(path, f"{path} must be an object, got {json_type(value)}")
            return value
        return check_fields(value, fields, path, problems)

    properties = {name: t.schema for name, t in fields.items()}
    return Type(check, {"type": "object", "properties": properties, "additionalProperties": False})


def without(name: str, keys: tuple[str, ...], why: str) -> Type:
    """An object that may not hold `keys`; the message about one is `{name}.{key} {why}`
    (worded the same wherever the object sits: iac.md fixes it for documents)."""

    def check(value: Any, path: str, problems: Problems) -> Any:
        if type(value) is not dict:
            problems.add(path, f"{path} must be an object, got {json_type(value)}")
            return value
        for key in keys:
            if key in value:
                problems.add(f"{path}.{key}", f"{name}.{key} {why}")
        return value

    return Type(check, {"type": "object", "not": {"anyOf": [{"required": [k]} for k in keys]}})
