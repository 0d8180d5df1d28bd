"""Versions share what did not change: every serial of a history reads back as written.

A state posted as a sequence of versions (instances added, removed, changed,
outputs changed, resources moved between modules, reordered) exports at every
serial equal to what was posted, while unchanged rows are stored once.
"""

import copy
import json
import random
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from app.graph.diff import diff_versions
from app.graph.readback import find_version
from app.graph.write.version import write_version
from app.jsonutil import dumps
from app.tfstate import parse_state
from tests.helpers.corpus import corpus_files
from tests.helpers.edges import instance_edges
from tests.helpers.histories import as_numbers, evolve, exports_as_posted, histories
from tests.helpers.states import resource, state


async def test_corpus_histories_export_every_serial_as_posted(conn) -> None:
    rng = random.Random(7)
    for index, path in enumerate(corpus_files()):
        name = f"history/{index}"
        document = json.loads(path.read_bytes())
        posted = {document["serial"]: path.read_bytes()}
        await write_version(conn, name, path.read_bytes(), actor="test")
        for step in range(6):
            document = evolve(document, step, rng)
            body = dumps(document)
            await write_version(conn, name, body, actor="test")
            posted[document["serial"]] = body
        await exports_as_posted(conn, name, posted)


async def test_unchanged_rows_and_edges_are_stored_once(conn) -> None:
    resources = [
        resource("aws_vpc", "main", attributes={"id": "vpc-1"}),
        resource("aws_subnet", "a", keys=[0, 1, 2], depends_on=["aws_vpc.main"]),
        resource("aws_instance", "web", keys=["x", "y"], depends_on=["aws_subnet.a"]),
    ]
    first = state(resources, serial=1)
    await write_version(conn, "shared", first, actor="test")
    document = json.loads(first)
    document["serial"] = 2
    document["resources"][2]["instances"][0]["attributes"] = {"size": 2}
    second = await write_version(conn, "shared", dumps(document), actor="test")
    counts = await conn.fetchrow(
        """SELECT (SELECT count(*) FROM resources WHERE state_id = $1) AS rows,
                  (SELECT count(*) FROM resource_dependencies WHERE state_id = $1) AS edges""",
        second.state_id,
    )
    # 6 instances + the one changed; 3 edges to the vpc, 2 to the subnets' resource and
    # its 3 members, + the changed instance's edge again
    assert (counts["rows"], counts["edges"]) == (7, 9)
    event = await conn.fetchval(
        "SELECT detail FROM events WHERE serial = 2 AND state_name = 'shared'"
    )
    assert (event["added"], event["changed"], event["removed"]) == (0, 1, 0)
    # a new instance of a depended-on resource: kept dependents gain an edge to it
    document["serial"] = 3
    document["resources"][0]["instances"].append({"schema_version": 0, "index_key": 1})
    document["resources"][0]["instances"][0]["index_key"] = 0
    await write_version(conn, "shared", dumps(document), actor="test")
    open_edges = await instance_edges(conn, "shared")
    assert {(source, target) for source, target, _ in open_edges} == {
        *((f"aws_subnet.a[{i}]", f"aws_vpc.main[{k}]") for i in range(3) for k in range(2)),
        *((f'aws_instance.web["{k}"]', f"aws_subnet.a[{i}]") for k in "xy" for i in range(3)),
    }


async def test_diff_and_reads_at_each_serial(conn) -> None:
    base = [resource("aws_s3_bucket", "b", keys=[0, 1], attributes={"acl": "private"})]
    await write_version(conn, "d", state(base, serial=1), actor="test")
    changed = [resource("aws_s3_bucket", "b", keys=[0, 1], attributes={"acl": "public-read"})]
    await write_version(conn, "d", state(changed, serial=5), actor="test")
    gone = [resource("aws_s3_bucket", "b", keys=[1], attributes={"acl": "public-read"})]
    latest = await write_version(conn, "d", state(gone, serial=9), actor="test")
    diffs = await diff_versions(conn, [(latest.version_id, 1), (latest.version_id, 5)])
    against_first, against_second = diffs[(latest.version_id, 1)], diffs[(latest.version_id, 5)]
    assert against_first.removed == ["aws_s3_bucket.b[0]"] and against_first.added == []
    assert [c.address for c in against_first.changed] == ["aws_s3_bucket.b[1]"]
    assert against_second.removed == ["aws_s3_bucket.b[0]"] and against_second.changed == []
    middle = await find_version(conn, "d", 5)
    back = await diff_versions(conn, [(middle["id"], 9)])
    assert back[(middle["id"], 9)].added == ["aws_s3_bucket.b[0]"]


@pytest.mark.slow
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(history=histories())
async def test_random_histories_export_and_diff_every_serial_as_posted(pool, history) -> None:
    name = f"random/{uuid.uuid4()}"
    posted = {}
    async with pool.acquire() as conn:
        for document in history:
            body = dumps(document)
            await write_version(conn, name, body, actor="test")
            posted[document["serial"]] = body
        await exports_as_posted(conn, name, posted)
        # every pair's diff, from the row ranges, equals the diff of the posted documents
        for serial, body in posted.items():
            version = await find_version(conn, name, serial)
            keys = [(version["id"], other) for other in posted]
            for (_, other), got in (await diff_versions(conn, keys)).items():
                expected = _document_diff(posted[other], body)
                assert (got.added, got.removed, [c.address for c in got.changed]) == expected


def _document_diff(old: bytes, new: bytes) -> tuple[list[str], list[str], list[str]]:
    """(added, removed, changed attributes) by address, computed from two documents."""
    before = {r.address: r.attributes for r in parse_state(old).instances}
    after = {r.address: r.attributes for r in parse_state(new).instances}
    ordered = sorted(before.keys() | after.keys(), key=str.encode)
    return (
        [a for a in ordered if a not in before],
        [a for a in ordered if a not in after],
        [a for a in ordered if a in before and a in after and not _same(before[a], after[a])],
    )


def _same(a: Any, b: Any) -> bool:
    # jsonb equality: numbers by value, JSON null and absent apart
    return (
        as_numbers(dumps(a)) == as_numbers(dumps(b))
        if a is not None and b is not None
        else (a is b)
    )


async def _open_edges(conn: Any, name: str) -> list[tuple[str, str, bool]]:
    """The current version's edges by address, with their direct flag."""
    return await instance_edges(conn, name)


@pytest.mark.parametrize(
    "changes",
    [
        {"c": {"attributes": {"n": 2}}},  # the same dependencies: its edges carried over
        {"c": {"dependencies": ["aws_vpc.a"]}},  # in place, other dependencies
        {"c": {"dependencies": []}},  # names nothing now
        {"d": {"depends_on": ["aws_vpc.a"]}},  # legacy names added
        {"b": {"attributes": {"n": 2}}, "d": {"dependencies": ["aws_vpc.b"]}},
    ],
)
async def test_the_edges_of_a_change_are_those_of_a_fresh_import(conn, changes) -> None:
    deps = {"a": [], "b": ["a"], "c": ["a", "b"], "d": ["c", "b", "a"]}
    document = json.loads(
        state(
            [
                resource("aws_vpc", n, depends_on=[f"aws_vpc.{d}" for d in t])
                for n, t in deps.items()
            ]
        )
    )
    await write_version(conn, "edges", dumps(document), actor="test")
    changed = copy.deepcopy(document) | {"serial": 2}
    for res in changed["resources"]:
        res["instances"][0].update(changes.get(res["name"], {}))
    await write_version(conn, "edges", dumps(changed), actor="test")
    await write_version(conn, "edges-fresh", dumps(changed), actor="test")
    assert await _open_edges(conn, "edges") == await _open_edges(conn, "edges-fresh")
    assert await _open_edges(conn, "edges")  # the case has edges to compare
