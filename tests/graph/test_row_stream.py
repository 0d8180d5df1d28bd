"""A write's pass over a scanned state (app/graph/write/stream.py): an instance kept by
its raw hash gets the very reference a normalized one would, its names and dependency
lists the objects the write shares."""

import uuid
from typing import Any

from app.graph.write.stream import RowStream
from app.jsonutil import dumps
from app.tfstate.scan import ScannedInstance, scan_state
from bench.generate import generate_state


def _document() -> dict[str, Any]:
    """A generated state (modules, count and for_each keys, dependencies) with a deposed
    object and a data source added."""
    document = generate_state(300)
    document["resources"].append(
        {
            "module": 'module.svc["api"]',
            "mode": "managed",
            "type": "aws_instance",
            "name": "replaced",
            "provider": 'provider["registry.terraform.io/hashicorp/aws"]',
            "instances": [
                {"schema_version": 1, "attributes": {"id": "i-1"}, "depends_on": ["x.y"]},
                {"schema_version": 1, "deposed": "00000001", "attributes": {"id": "i-0"}},
            ],
        }
    )
    document["resources"].append(
        {
            "mode": "data",
            "type": "aws_ami",
            "name": "base",
            "provider": 'provider["registry.terraform.io/hashicorp/aws"]',
            "instances": [{"schema_version": 0, "attributes": {"id": "ami-1"}}],
        }
    )
    return document


def _stream(current: dict[str, Any], body: bytes) -> RowStream:
    ids = (uuid.uuid4(), uuid.uuid4(), 2)
    return RowStream(current, scan_state(body), ids, lambda row: [])


def test_a_kept_instance_gets_the_reference_a_normalized_one_gets() -> None:
    body = dumps(_document())
    seen: set[str] = set()
    items: list[tuple[ScannedInstance, str]] = []
    for item in scan_state(body).instances():
        items.append((item, item.row(seen).address))
    # every instance kept: the current version's rows have their raw hashes
    current = {address: (uuid.uuid4(), b"", item.raw_hash) for item, address in items}
    stream = _stream(dict(current), body)
    while stream.next_batch() is not None:
        pass
    assert not stream.new and len(stream.refs) == len(items)

    expected = _stream({}, body)
    for ref, (item, address) in zip(stream.refs, items, strict=True):
        assert ref == expected._ref(item.ref(address)) == expected._ref(item.row(set()))
    assert stream.row_ids == [current[address][0] for _, address in items]

    lists: dict[tuple[str, ...], Any] = {}
    for ref in stream.refs:
        for names in (ref.dependencies_raw, ref.depends_on_raw):
            if isinstance(names, list):  # equal lists: one object
                assert lists.setdefault(tuple(names), names) is names
    types = {ref.type for ref in stream.refs}
    for ref in stream.refs:  # equal names: one object
        assert next(t for t in types if t == ref.type) is ref.type
