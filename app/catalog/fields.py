"""Field validators: each takes an input value and returns it (normalized) or raises
ValueError with what was expected. kinds.py names the field in the final error."""

import contextlib
import re
import uuid
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], Any]

_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


def shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected a non-empty string, got {shown(value)}")
    return value


def optional_text(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"expected a string or null, got {shown(value)}")
    return value


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {shown(value)}")
    return value


def obj(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"expected an object, got {shown(value)}")
    return value


def any_json(value: Any) -> Any:
    return value


def slug(value: Any) -> str:
    if not isinstance(value, str) or not _SLUG.match(value):
        raise ValueError(
            f"expected a slug (lowercase letters, digits, '-', '_'; up to 63), got {shown(value)}"
        )
    return value


def ref(value: Any) -> str:
    if not isinstance(value, str) or not _REF.match(value):
        raise ValueError(
            f"expected a ref (letters, digits, '_', '.', ':', '-'), got {shown(value)}"
        )
    return value


def uuid_text(value: Any) -> str:
    """A UUID in canonical text form (IDs travel as strings through the domain API)."""
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return str(uuid.UUID(value))
    raise ValueError(f"expected a UUID, got {shown(value)}")


def optional_uuid(value: Any) -> str | None:
    return None if value is None else uuid_text(value)


def count(value: Any) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"expected a non-negative integer or null, got {shown(value)}")
    return value


def one_of(*choices: str) -> Check:
    def check(value: Any) -> str:
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {shown(value)}")
        return value

    return check


def list_of(item: Check, *, non_empty: bool = False) -> Check:
    """A list of distinct items (order kept: it is what the author wrote)."""

    def check(value: Any) -> list[Any]:
        if not isinstance(value, list):
            raise ValueError(f"expected a list, got {shown(value)}")
        if non_empty and not value:
            raise ValueError("expected a non-empty list")
        items = [item(v) for v in value]
        if len(set(map(str, items))) != len(items):
            raise ValueError(f"expected distinct items, got {shown(value)}")
        return items

    return check
