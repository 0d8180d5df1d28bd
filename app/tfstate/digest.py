"""Content hashes of rows: a write keeps the current version's row when the hash is
the same, so a version shares every row that did not change (app/graph/store.py)."""

import hashlib
from collections.abc import Iterable

from app.jsonutil import dumps
from app.tfstate.parse import InstanceRow, OutputRow

# Everything an instance row holds but its place in the document (app/tfstate/order.py):
# the two position fields follow the address.
assert InstanceRow._fields[1:3] == ("resource_index", "instance_index")
_HASHED_INSTANCE_FIELDS = InstanceRow._fields[:1] + InstanceRow._fields[3:]


def _digest(fields: Iterable[str], values: Iterable[object]) -> bytes:
    # Absent (None) and JSON null (JSON_NULL, dumped as null) must hash apart: absent
    # fields are left out of the object, not written as null.
    present = {f: v for f, v in zip(fields, values, strict=True) if v is not None}
    return hashlib.blake2b(dumps(present), digest_size=16).digest()


def instance_digest(row: InstanceRow) -> bytes:
    return _digest(_HASHED_INSTANCE_FIELDS, (row[0], *row[3:]))


def output_digest(row: OutputRow) -> bytes:
    return _digest(OutputRow._fields, row)
