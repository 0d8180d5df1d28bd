"""Exact JSON: a line decoded as strictly as orjson does but keeping integers past
64 bits, and one spelling per value to compare values and record keys exactly."""

import json
from typing import Any

import orjson


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text} is out of range")
    return value


def load_exact(raw: bytes) -> Any:
    """Parse a line holding 19+ digits in a row (an integer past 64 bits, maybe: orjson would
    round it) with the stdlib, made as strict as orjson."""
    try:
        value = json.loads(
            raw.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite_float
        )
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except UnicodeEncodeError:
        raise ValueError("lone surrogate escape in a string") from None
    return value


def canonical(value: Any) -> bytes:
    """One spelling per JSON value, to compare values and record keys exactly."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # integers past 64 bits
        return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
