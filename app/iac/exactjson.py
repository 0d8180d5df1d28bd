"""Exact JSON: one spelling per value (integers past 64 bits kept), to compare values
and record keys exactly. Lines are read by app.jsonutil.read."""

import json
from typing import Any

import orjson


def canonical(value: Any) -> bytes:
    """One spelling per JSON value, to compare values and record keys exactly."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # integers past 64 bits
        return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
