"""State documents that parsing refuses, each with what the refusal says: the parser's
and the scanner's tests both hold to them."""

import json
from typing import Any

from app.tfstate.parse import MAX_SERIAL

# one managed resource of one instance: each refused document changes a part of it
_RESOURCE: dict[str, Any] = {
    "mode": "managed",
    "type": "t",
    "name": "n",
    "provider": "p",
    "instances": [{"attributes": {}}],
}


def _doc(**changes: Any) -> bytes:
    doc: dict[str, Any] = {"version": 4, "serial": 1, "lineage": "L", "resources": [_RESOURCE]}
    doc.update(changes)
    return json.dumps(doc).encode()


def _resource(**changes: Any) -> bytes:
    return _doc(resources=[{**_RESOURCE, **changes}])


# (a body, what refusing it says): app/tfstate/scan.py's tests refuse them too
BAD_INPUT = [
    (b"{not json", "not valid JSON"),
    (b"[1, 2]", "a state must be a JSON object, got a list"),
    (_doc(version=3), "unsupported state version 3: only version 4 is supported"),
    (b'{"serial": 1, "lineage": "L"}', "missing required field 'version'"),
    (_doc(serial="7"), "state: 'serial' must be an integer, got a string"),
    (_doc(serial=-1), f"state: 'serial' must be between 0 and {MAX_SERIAL}, got -1"),
    (_doc(serial=2**63), "state: 'serial' must be between 0 and"),  # a bigint column
    (
        json.dumps({"version": 4, "serial": 1}).encode(),
        "state: missing required field 'lineage'",
    ),
    (_doc(resources={}), "state: 'resources' must be a list, got an object"),
    (
        _resource(provider=None),
        r"resources\[0\] \(t.n\): 'provider' must be a string, got null",
    ),
    (_resource(type=5), r"resources\[0\]: 'type' must be a string, got an integer"),
    (_resource(mode="weird"), "'mode' must be 'managed' or 'data'"),
    (
        _resource(instances=[{"schema_version": "1"}]),
        r"\(t.n\) instance 0: 'schema_version' must be an integer",
    ),
    (
        _resource(instances=[{"index_key": 0}, {"index_key": 0}]),
        r"duplicate instance address t.n\[0\]",
    ),
    (_resource(instances=[{"dependencies": [1]}]), "'dependencies' must be a list of strings"),
    (_doc(outputs={"o": 1}), "output 'o': must be an object, got an integer"),
    (_doc(outputs={"o": {"value": "a\x00b"}}), r"contains U\+0000"),
]
