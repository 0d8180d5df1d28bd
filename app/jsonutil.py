"""JSON in and out, fast and exact.

orjson is several times faster than the stdlib, but it reads integers past
64 bits as floats and refuses to write them. State files do carry such
numbers (Terraform's own `v3-bigint` test state), so any document holding a
run of 19+ digits takes the exact stdlib path instead.
"""

import contextlib
import gc
import json
from collections.abc import Iterator
from typing import Any

import orjson

# Digits to "0", everything else to ".": a run of 19 digits is then a plain
# substring search, ten times faster than a regex over a 100 MB body.
_DIGITS_ONLY = bytes(ord("0") if chr(b).isdigit() and b < 128 else ord(".") for b in range(256))
_LONG_RUN = b"0" * 19
# Parsing builds millions of containers; generational GC passes over them are
# pure waste (no cycles can form), and cost 3x the parse itself on big states.
_NO_GC_ABOVE = 1 << 20


class _JsonNull:
    """A JSON `null` that must be stored as such, not as SQL NULL (= key absent)."""

    def __repr__(self) -> str:
        return "JSON_NULL"


JSON_NULL = _JsonNull()


def _default(value: Any) -> Any:
    if value is JSON_NULL:
        return None
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building many objects from one document."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def has_long_digit_run(raw: bytes) -> bool:
    """Whether `raw` holds 19+ ASCII digits in a row: a number orjson may not read exactly."""
    return _LONG_RUN in raw.translate(_DIGITS_ONLY)


def loads(data: bytes | str) -> Any:
    """Parse JSON; integers of any size keep their exact value."""
    raw = data.encode() if isinstance(data, str) else data
    parse = json.loads if has_long_digit_run(raw) else orjson.loads
    if len(raw) < _NO_GC_ABOVE:
        return parse(raw)
    with gc_paused():
        return parse(raw)


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
