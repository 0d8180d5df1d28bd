"""Content hashes of rows: a write keeps the current version's row when the hash is
the same, so a version shares every row that did not change (app/graph/store.py)."""

import hashlib
from typing import Any

import orjson

from app.jsonutil import JSON_NULL, dumps
from app.tfstate.parse import InstanceRow, OutputRow

# Everything an instance row holds but its place in the document (app/tfstate/order.py):
# the two position fields follow the address.
assert InstanceRow._fields[1:3] == ("resource_index", "instance_index")


def _null_apart(value: Any) -> Any:
    # An absent field (None) is written as null; a JSON null (JSON_NULL) as "\u0000",
    # which no stored string can hold (PostgreSQL refuses U+0000), so the two hash apart.
    if value is JSON_NULL:
        return "\x00"
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def _digest(values: tuple[Any, ...]) -> bytes:
    try:
        encoded = orjson.dumps(values, default=_null_apart)
    except TypeError:  # integers past 64 bits: the exact (slower) path
        encoded = dumps(tuple(_null_apart(v) if v is JSON_NULL else v for v in values))
    return hashlib.blake2b(encoded, digest_size=16).digest()


def instance_digest(row: InstanceRow) -> bytes:
    return _digest((row[0], *row[3:]))


def output_digest(row: OutputRow) -> bytes:
    return _digest(tuple(row))
