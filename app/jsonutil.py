"""JSON in and out, fast and exact.

orjson is several times faster than the stdlib, but it reads integers past
64 bits as floats and refuses to write them. State files do carry such
numbers (Terraform's own `v3-bigint` test state), so any document holding a
run of 19+ digits takes the exact stdlib path instead.
"""

import json
import re
from typing import Any

import orjson

_LONG_DIGITS = re.compile(rb"\d{19}")


class _JsonNull:
    """A JSON `null` that must be stored as such, not as SQL NULL (= key absent)."""

    def __repr__(self) -> str:
        return "JSON_NULL"


JSON_NULL = _JsonNull()


def _default(value: Any) -> Any:
    if value is JSON_NULL:
        return None
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def loads(data: bytes | str) -> Any:
    """Parse JSON; integers of any size keep their exact value."""
    raw = data.encode() if isinstance(data, str) else data
    if _LONG_DIGITS.search(raw):
        return json.loads(raw)
    return orjson.loads(raw)


def dumps(value: Any, *, indent: bool = False) -> bytes:
    """Serialize to UTF-8 bytes (compact, or indented by two spaces with a final
    newline, as Terraform writes states); integers of any size are kept."""
    try:
        if indent:
            return orjson.dumps(value, default=_default, option=orjson.OPT_INDENT_2) + b"\n"
        return orjson.dumps(value, default=_default)
    except TypeError as exc:  # orjson raises TypeError for out-of-range ints
        if "64-bit" not in str(exc):
            raise
        if indent:
            return (
                json.dumps(value, default=_default, ensure_ascii=False, indent=2).encode() + b"\n"
            )
        return json.dumps(
            value, default=_default, ensure_ascii=False, separators=(",", ":")
        ).encode()
