"""Content hashes of rows: a write keeps the current version's row when the hash is the
same, so a version shares every row that did not change (app/graph/write/stream.py)."""

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


def _digest(values: tuple[Any, ...], *, sort_keys: bool = False) -> bytes:
    try:
        encoded = orjson.dumps(
            values, default=_null_apart, option=orjson.OPT_SORT_KEYS if sort_keys else None
        )
    except TypeError:  # integers past 64 bits: the exact (slower) path
        exact = tuple(_null_apart(v) if v is JSON_NULL else v for v in values)
        encoded = dumps(canonical(exact) if sort_keys else exact)
    return hashlib.blake2b(encoded, digest_size=16).digest()


def instance_digest(row: InstanceRow, secrets_mac: bytes | None = None) -> bytes:
    """With `secrets_mac`, of a row whose secrets were taken out (app/graph/sensitive.py):
    the keyed hash of those stands for them, so the digest confirms no guessed secret.
    That digest is of the row's canonical form (object keys sorted), so it is the same
    for the row as parsed and as read back from JSONB (`infragraph rotate-key`)."""
    return _keyed((row[0], *row[3:]), secrets_mac)


def output_digest(row: OutputRow, secrets_mac: bytes | None = None) -> bytes:
    return _keyed(tuple(row), secrets_mac)


def _keyed(values: tuple[Any, ...], secrets_mac: bytes | None) -> bytes:
    if secrets_mac is None:
        return _digest(values)
    return _digest((*values, secrets_mac.hex()), sort_keys=True)


def canonical(value: Any) -> Any:
    """`value` with every object's keys in sorted order (JSONB keeps its own order)."""
    if isinstance(value, dict):
        return {key: canonical(value[key]) for key in sorted(value)}
    if isinstance(value, list | tuple):
        return type(value)(canonical(item) for item in value)
    return value


def canonical_json(value: Any) -> bytes:
    """`value` as JSON with every object's keys sorted: the same for a value as parsed
    and as read back from JSONB."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # integers past 64 bits
        return dumps(canonical(value))
