"""The store: import, export through the rows, serial/lineage rules, events."""

import json
import time
import uuid

import pytest
from hypothesis import HealthCheck, given, settings

from app.errors import Conflict
from app.graph.raw import Body, raw_version
from app.graph.readback import export_state, find_version
from app.graph.states import delete_state
from app.graph.write import stream as row_stream
from app.graph.write.version import write_version
from app.jsonutil import dumps
from app.tfstate import ScannedState, StateError, parse_state, stream
from app.tfstate.scan import scan_stream
from app.tfstate.stream import NotStreamable
from bench.generate import generate_state
from tests.helpers.corpus import corpus_files
from tests.helpers.edges import instance_edges
from tests.helpers.histories import as_numbers
from tests.helpers.states import resource, state
from tests.helpers.strategies import states


async def test_every_corpus_file_round_trips_through_the_database(conn) -> None:
    files = corpus_files()
    assert len(files) >= 100
    for index, path in enumerate(files):
        body = path.read_bytes()
        await write_version(conn, f"corpus/{index}", body, actor="test", action="import")
        exported = await export_state(conn, f"corpus/{index}", actor="test")
        assert exported == json.loads(body), path.name


def _state(serial: int, lineage: str = "L1", value: str = "a") -> bytes:
    return json.dumps(
        {
            "version": 4,
            "terraform_version": "1.15.5",
            "serial": serial,
            "lineage": lineage,
            "outputs": {},
            "resources": [
                {
                    "mode": "managed",
                    "type": "terraform_data",
                    "name": "x",
                    "provider": 'provider["terraform.io/builtin/terraform"]',
                    "instances": [{"schema_version": 0, "attributes": {"input": value}}],
                }
            ],
        }
    ).encode()


async def test_export_is_rendered_from_the_rows_not_from_raw_state(conn) -> None:
    await write_version(conn, "s", _state(1), actor="test")
    await conn.execute(
        """UPDATE resources SET attributes = jsonb_set(attributes, '{input}', '"changed"')"""
    )
    exported = await export_state(conn, "s", actor="test")
    assert exported["resources"][0]["instances"][0]["attributes"] == {"input": "changed"}
    raw = await raw_version(conn, "s")
    assert raw is not None and raw.body is not None
    assert json.loads(raw.body)["resources"][0]["instances"][0]["attributes"] == {"input": "a"}


async def test_raw_state_is_kept_byte_for_byte(conn) -> None:
    body = b'{"version":4,  "serial":1,"lineage":"L",\n"resources":[]}'
    await write_version(conn, "s", body, actor="test")
    raw = await raw_version(conn, "s")
    assert raw is not None and raw.body == body


async def test_serial_rules(conn) -> None:
    first = await write_version(conn, "s", _state(2), actor="test")
    again = await write_version(conn, "s", _state(2), actor="test")
    assert first.created and not again.created and again.version_id == first.version_id
    with pytest.raises(Conflict, match="serial 2 is not newer"):
        await write_version(conn, "s", _state(2, value="other"), actor="test")
    with pytest.raises(Conflict, match="serial 1 is not newer"):
        await write_version(conn, "s", _state(1), actor="test")
    with pytest.raises(Conflict, match="lineage mismatch"):
        await write_version(conn, "s", _state(3, lineage="L2"), actor="test")
    assert await conn.fetchval("SELECT count(*) FROM state_versions") == 1


async def test_lineage_may_change_once_the_state_is_emptied(conn) -> None:
    await write_version(conn, "s", _state(1), actor="test")
    empty = json.dumps({"version": 4, "serial": 2, "lineage": "L1", "resources": []}).encode()
    await write_version(conn, "s", empty, actor="test")
    await write_version(conn, "s", _state(3, lineage="L2"), actor="test")
    assert (await find_version(conn, "s"))["lineage"] == "L2"


async def test_every_write_and_export_appends_an_event(conn) -> None:
    await write_version(conn, "s", _state(1), actor="alice", action="import")
    await write_version(conn, "s", _state(2), actor="bob")
    await export_state(conn, "s", serial=1, actor="carol")
    rows = await conn.fetch("SELECT action, actor, serial FROM events ORDER BY created_at")
    assert [tuple(r) for r in rows] == [
        ("import", "alice", 1),
        ("write", "bob", 2),
        ("export", "carol", 1),
    ]


async def test_edges_follow_dependencies_to_every_instance(conn) -> None:
    doc = {
        "version": 4,
        "serial": 1,
        "lineage": "L",
        "resources": [
            {
                "mode": "managed",
                "type": "t",
                "name": "a",
                "provider": "p",
                "instances": [{"index_key": i, "attributes": {}} for i in range(3)],
            },
            {
                "module": 'module.m["x"]',
                "mode": "managed",
                "type": "t",
                "name": "b",
                "provider": "p",
                "instances": [{"attributes": {}, "dependencies": ["t.a", "var.nothing"]}],
            },
            {
                "mode": "data",
                "type": "t",
                "name": "c",
                "provider": "p",
                "instances": [{"attributes": {}, "dependencies": ["module.m.t.b"]}],
            },
        ],
    }
    await write_version(conn, "s", json.dumps(doc).encode(), actor="test")
    edges = [(source, target) for source, target, _ in await instance_edges(conn, "s")]
    assert edges == [
        ("data.t.c", 'module.m["x"].t.b'),
        ('module.m["x"].t.b', "t.a[0]"),
        ('module.m["x"].t.b', "t.a[1]"),
        ('module.m["x"].t.b', "t.a[2]"),
    ]
    raw = await conn.fetchval("SELECT dependencies_raw FROM resources WHERE name = 'b'")
    assert raw == ["t.a", "var.nothing"]


@given(state=states())
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@pytest.mark.slow
async def test_generated_states_round_trip_through_the_database(pool, state) -> None:
    body = json.dumps(state).encode()
    name = f"generated/{uuid.uuid4()}"
    async with pool.acquire() as connection:
        await write_version(connection, name, body, actor="test")
        exported = await export_state(connection, name, actor="test")
        assert as_numbers(dumps(exported)) == as_numbers(body)


@pytest.mark.slow
async def test_a_state_of_20000_instances_and_60000_edges_imports(conn) -> None:
    body = dumps(generate_state(20_000, deps=3))
    started = time.perf_counter()
    written = await write_version(conn, "big", body, actor="test", action="import")
    elapsed = time.perf_counter() - started
    counts = await conn.fetchrow(
        """
        SELECT (SELECT count(*) FROM resources WHERE state_version_id = $1) AS resources,
               (SELECT count(*) FROM resource_dependencies WHERE state_version_id = $1) AS edges
        """,
        written.version_id,
    )
    assert counts["resources"] == 20_000
    assert counts["edges"] >= 59_900  # 3 per instance, less the first few
    print(
        f"\nimported 20,000 instances / {counts['edges']} edges"
        f" ({len(body) / 1e6:.1f} MB) in {elapsed:.2f}s"
    )
    assert await export_state(conn, "big", actor="test") == json.loads(body)


async def test_deleting_a_state_removes_its_rows_and_edges_and_keeps_its_events(conn) -> None:
    await write_version(conn, "gone", dumps(generate_state(30)), actor="test")
    await write_version(conn, "kept", dumps(generate_state(30)), actor="test")
    state_id = await conn.fetchval("SELECT id FROM states WHERE name = 'gone'")
    kept_edges = await conn.fetchval("SELECT count(*) FROM resource_dependencies")
    assert await delete_state(conn, state_id, "gone", actor="test") == 1
    kept = await conn.fetchval("SELECT id FROM states WHERE name = 'kept'")
    counts = await conn.fetchrow(
        """SELECT (SELECT count(*) FROM resources) AS resources,
                  (SELECT count(*) FROM resource_dependencies d JOIN state_versions v
                     ON v.id = d.state_version_id WHERE v.state_id = $1) AS kept_edges,
                  (SELECT count(*) FROM resource_dependencies) AS edges""",
        kept,
    )
    assert counts["resources"] == 30
    assert counts["edges"] == counts["kept_edges"] == kept_edges // 2
    actions = await conn.fetch(
        "SELECT action FROM events WHERE state_name = 'gone' ORDER BY created_at"
    )
    assert [a["action"] for a in actions] == ["write", "delete"]


async def test_rows_without_raw_hashes_are_kept_and_given_theirs(conn) -> None:
    resources = [resource("aws_vpc", "a"), resource("aws_subnet", "b", keys=[0, 1])]
    first = state(resources)
    # a NormalizedState (as an IaC apply writes): rows without raw hashes, as before 0018
    written = await write_version(conn, "hashes", first, actor="t", state=parse_state(first))
    rows = "SELECT id, raw_hash FROM resources WHERE state_id = $1 AND serial_to IS NULL"
    before = {r["id"]: r["raw_hash"] for r in await conn.fetch(rows, written.state_id)}
    assert set(before.values()) == {None}
    await write_version(conn, "hashes", state(resources, serial=2), actor="t")
    after = {r["id"]: r["raw_hash"] for r in await conn.fetch(rows, written.state_id)}
    assert after.keys() == before.keys()  # kept by their content hash, now with raw hashes
    assert None not in after.values() and len(set(after.values())) == 3
    # the next write keeps them by raw hash alone: the same rows
    await write_version(conn, "hashes", state(resources, serial=3), actor="t")
    assert {r["id"] for r in await conn.fetch(rows, written.state_id)} == before.keys()


def _streamed(body: bytes) -> tuple[Body, ScannedState]:
    """`body` as a big POST gives it to the write: read a resource at a time."""
    spooled = Body.of(body)
    return spooled, scan_stream(spooled.reader)


async def test_every_corpus_file_round_trips_streamed(conn, monkeypatch) -> None:
    monkeypatch.setattr(stream, "BLOCK", 4096)  # resources cross windows
    monkeypatch.setattr(row_stream, "BATCH_INSTANCES", 3)  # and batches
    for index, path in enumerate(corpus_files()):
        body = path.read_bytes()
        try:
            spooled, scanned = _streamed(body)
        except NotStreamable:
            continue
        await write_version(conn, f"corpus/{index}", spooled, actor="test", state=scanned)
        exported = await export_state(conn, f"corpus/{index}", actor="test")
        assert exported == json.loads(body), path.name


async def test_a_streamed_history_exports_every_version(conn, monkeypatch) -> None:
    monkeypatch.setattr(row_stream, "BATCH_INSTANCES", 7)
    document = generate_state(60, seed=3)
    bodies = []
    for serial in range(1, 5):
        document = {**document, "serial": serial}
        resources = document["resources"]
        document["resources"] = resources[1:] + resources[:1]  # moved: a layout
        document["resources"][0]["instances"][0]["attributes"]["v"] = serial  # changed
        bodies.append(dumps(document, indent=True))
        spooled, scanned = _streamed(bodies[-1])
        await write_version(conn, "h", spooled, actor="test", state=scanned)
    for serial, body in enumerate(bodies, 1):
        assert await export_state(conn, "h", serial=serial, actor="test") == json.loads(body)


async def test_a_document_found_unstreamable_midway_is_written_whole(conn) -> None:
    # outputs after the resources: the write began before it knew them
    body = _state(1).replace(b'"outputs": {}, ', b"")[:-1]
    body += b', "outputs": {"o": {"value": "x", "type": "string"}}}'
    spooled, scanned = _streamed(body)
    await write_version(conn, "s", spooled, actor="test", state=scanned)
    assert await export_state(conn, "s", actor="test") == json.loads(body)
    broken = _state(2).replace(b'"schema_version"', b'schema_version"')  # a resource not JSON
    spooled, scanned = _streamed(broken)
    with pytest.raises(StateError, match="not valid JSON"):
        await write_version(conn, "s", spooled, actor="test", state=scanned)
    assert (await find_version(conn, "s", None))["serial"] == 1
