"""JSON in and out, fast and exact; `read` is the one way client input is parsed.

orjson is several times faster than the stdlib, but it reads integers past
64 bits as floats and refuses to write them. State files do carry such
numbers (Terraform's own `v3-bigint` test state), so any document holding a
run of 19+ digits takes the exact stdlib path instead.
"""

import json
import math
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from app.process import gc_paused

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


def has_long_digit_run(raw: bytes) -> bool:
    """Whether `raw` holds 19+ ASCII digits in a row: a number orjson may not read exactly."""
    return _LONG_RUN in raw.translate(_DIGITS_ONLY)


def loads(data: bytes | str) -> Any:
    """Parse JSON; integers of any size keep their exact value."""
    raw = data.encode() if isinstance(data, str) else data
    return _parsed(raw, json.loads if has_long_digit_run(raw) else orjson.loads)


def _parsed(raw: bytes, parse: Callable[[bytes], Any]) -> Any:
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


# Limits of what any client may send (states, LockInfo, GraphQL bodies and
# variables, cursors, IaC lines). Depth: orjson writes at most 254 levels and a
# value is served inside a GraphQL answer's own nesting, so 128 leaves room.
# A string's length is bounded by its input's body limit; those stored in an index
# (names, types, principals, tags) have their own, shorter one where they are read.
MAX_DEPTH = 128
_ORJSON_MAX_DEPTH = 254  # orjson.dumps refuses deeper values
# Wrapped in this many lists, a value deeper than MAX_DEPTH is too deep for orjson.dumps:
# a depth check at the speed of a C serializer (20 ms for a 21 MB state, 15 x a Python walk).
_DEPTH_PROBE = _ORJSON_MAX_DEPTH - MAX_DEPTH


class JsonInputError(ValueError):
    """Input that is not JSON, or JSON beyond what the server stores; the message says which."""


# Python converts decimal text of at most this many digits to an int (a guard against
# its quadratic conversion); a longer integer cannot be kept exact here, so it is refused.
MAX_INT_DIGITS = sys.get_int_max_str_digits() or 4300


def too_many_digits() -> JsonInputError:
    return JsonInputError(f"an integer has more than {MAX_INT_DIGITS} digits")


def _reject_constant(name: str) -> Any:
    raise JsonInputError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonInputError(f"the number {text[:40]} is out of range")
    return value


def _check_text(text: str) -> None:
    if "\x00" in text:
        raise JsonInputError("a string contains U+0000, which PostgreSQL cannot store")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise JsonInputError("a string contains a lone surrogate (\\ud800-\\udfff)") from None


def _check(value: Any, level: int = 1) -> None:
    """Every string and key (U+0000, lone surrogates) and the depth, in Python:
    for what neither orjson nor a byte scan could rule out. `level`: the value's depth
    in its document."""
    if isinstance(value, str):
        _check_text(value)
    stack = [(value, level)] if isinstance(value, dict | list) else []
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise JsonInputError(f"nested deeper than {MAX_DEPTH} levels")
        items: Iterable[Any] = node
        if type(node) is dict:
            for key in node:
                _check_text(key)
            items = node.values()
        for item in items:
            kind = type(item)
            if kind is dict or kind is list:
                stack.append((item, depth + 1))
            elif kind is str:
                _check_text(item)


class _DepthProbe(threading.local):
    """_DEPTH_PROBE nested lists, built once per thread; the innermost holds the value."""

    def __init__(self) -> None:
        self.inner: list[Any] = [None]
        self.outer = self.inner
        for _ in range(_DEPTH_PROBE - 1):
            self.outer = [self.outer]


_probe = _DepthProbe()


def _check_depth(value: Any) -> None:
    _probe.inner[0] = value
    try:
        orjson.dumps(_probe.outer)
    except TypeError:  # what orjson parsed it can write: only the depth can fail
        raise JsonInputError(f"nested deeper than {MAX_DEPTH} levels") from None
    finally:
        _probe.inner[0] = None


def check_value(value: Any, *, level: int, strings: bool) -> None:
    """What `read` checks of a document, for one value parsed at depth `level` of it by
    STRICT_DECODER: every string and its depth when `strings` (its text may hold an
    escaped U+0000 or surrogate, or a number orjson cannot encode), else its depth alone,
    at the speed of orjson."""
    if strings:
        _check(value, level)
    elif isinstance(value, dict | list):
        for _ in range(level - 1):
            value = [value]
        _check_depth(value)


# The exact stdlib parser, as strict as orjson.
STRICT_DECODER = json.JSONDecoder(parse_float=_finite_float, parse_constant=_reject_constant)
# (value, end): the one value at `index` of a text (app/tfstate/stream.py); StopIteration
# when none starts there
scan_value: Callable[[str, int], tuple[Any, int]] = STRICT_DECODER.scan_once  # type: ignore[attr-defined]


def read(data: bytes | str, *, level: int = 1) -> Any:
    """Parse JSON from a client, within the limits above; JsonInputError says what is wrong.
    `level`: the depth of the value in the document it was cut from (1: a whole document).

    Refused: invalid UTF-8, lone surrogates, U+0000, NaN, Infinity and numbers
    too big for a double, integers past MAX_INT_DIGITS, nesting past MAX_DEPTH.
    Other integers keep their exact value (jsonb stores them); a field stored as
    bigint checks its own range.
    """
    try:
        raw = data.encode() if isinstance(data, str) else data
    except UnicodeEncodeError:
        raise JsonInputError("not valid UTF-8: the text holds a lone surrogate") from None
    if not has_long_digit_run(raw):
        try:
            value = _parsed(raw, orjson.loads)  # no long run: checked once, here
        except orjson.JSONDecodeError as exc:
            raise JsonInputError(f"not valid JSON: {exc}") from None
        # orjson refused lone surrogates: only a body holding an escaped U+0000
        # (or a backslash before "u0000") needs every string read.
        check_value(value, level=level, strings=b"\\u0000" in raw)
        return value
    # a number past 64 bits, maybe: the exact stdlib parser, as strict as orjson
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonInputError(f"not valid UTF-8 (byte {exc.start + 1})") from None
    try:
        with gc_paused():
            value = STRICT_DECODER.decode(text)
    except RecursionError:
        raise JsonInputError(f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise JsonInputError(f"not valid JSON: {exc}") from None
    except JsonInputError:
        raise
    except ValueError:  # int()'s digit limit: the only other error the parser raises
        raise too_many_digits() from None
    _check(value, level)
    return value
