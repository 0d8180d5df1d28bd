"""A write that remembers the version it wrote (app/graph/write/memo.py) stores what a
write that remembers nothing stores: the same rows shared, the same edges, layout,
document and summary, over random edits; it reads only the resources whose bytes
changed; what it remembers wrongly it does not use."""

import copy
import random
import uuid
from typing import Any

import asyncpg
import pytest

from app.errors import BadInput
from app.graph.readback import find_version, render_version
from app.graph.write import memo
from app.graph.write.version import write_version
from app.jsonutil import dumps
from app.tfstate import StateError
from app.tfstate import skim as skim_module
from app.tfstate.scan import ScannedInstance
from bench.generate import generate_state
from tests.helpers.edges import instance_edges
from tests.helpers.skim import resources_read


def _edit(document: dict[str, Any], rng: random.Random) -> bool:
    """One random edit of `document` in place; True when it makes the document invalid."""
    resources = document["resources"]
    kind = rng.choice(
        ["attribute", "attribute", "remove", "add", "move", "instance", "depends", "duplicate"]
    )
    index = rng.randrange(len(resources))
    resource = resources[index]
    if kind == "attribute":
        instance = rng.choice(resource["instances"])
        instance["attributes"]["size"] = rng.randrange(10**6)
    elif kind == "remove" and len(resources) > 2:
        del resources[index]
    elif kind == "add":
        added = copy.deepcopy(resource)
        added["name"] = f"added_{rng.randrange(10**9)}"
        resources.insert(rng.randrange(len(resources) + 1), added)
    elif kind == "move":
        resources.insert(rng.randrange(len(resources)), resources.pop(index))
    elif kind == "instance":
        instances = resource["instances"]
        if len(instances) > 1 and rng.random() < 0.5:
            del instances[rng.randrange(len(instances))]
        else:
            added = copy.deepcopy(instances[-1])
            added["index_key"] = f"k{rng.randrange(10**9)}"
            instances.append(added)
    elif kind == "depends":
        other = rng.choice(resources)
        name = ".".join(
            part
            for part in (other.get("module"), "data" if other["mode"] == "data" else None)
            if part
        )
        target = f"{name + '.' if name else ''}{other['type']}.{other['name']}"
        rng.choice(resource["instances"])["dependencies"] = [target]
    elif kind == "duplicate":  # the same bytes, or the same addresses in other bytes
        added = copy.deepcopy(resource)
        if rng.random() < 0.5:
            added["instances"][0]["attributes"]["size"] = -1
        resources.insert(index + 1, added)
        return True
    return False


async def _written(conn: asyncpg.Connection, name: str) -> dict[str, Any]:
    """What a state's current version stores, as comparable values."""
    version = await find_version(conn, name)
    rows = await conn.fetch(
        """SELECT address, serial_from, content_hash FROM resources r
           WHERE state_id = $1 AND serial_to IS NULL ORDER BY address""",
        version["state_id"],
    )
    summary = await conn.fetchval(
        """SELECT detail FROM events WHERE state_name = $1 AND action = 'write'
           ORDER BY created_at DESC, id DESC LIMIT 1""",
        name,
    )
    layout, count = await conn.fetchrow(
        "SELECT layout, resource_count FROM state_versions WHERE id = $1", version["id"]
    )
    return {
        "rows": [tuple(row) for row in rows],
        "edges": await instance_edges(conn, name),
        "document": await render_version(conn, version),
        "layout": layout,
        "count": count,
        "summary": {k: summary[k] for k in ("added", "changed", "removed")},
    }


async def _write(conn: asyncpg.Connection, name: str, body: bytes) -> str | None:
    """Write `body` as the next version of `name`; the error it is refused with, if any."""
    try:
        await write_version(conn, name, body, actor="test")
    except (StateError, BadInput) as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("seed", range(6))
async def test_a_remembered_write_stores_what_a_forgetful_one_stores(
    conn, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    skipped = written = 0
    items = skim_module.SkimmedState.items

    def counted(self: Any, remembered: Any) -> Any:
        nonlocal skipped
        for item in items(self, remembered):
            skipped += isinstance(item, skim_module.SkippedResource)
            yield item

    monkeypatch.setattr(skim_module.SkimmedState, "items", counted)
    document = generate_state(120, seed=seed)
    names = f"memo-{seed}-{uuid.uuid4().hex[:6]}", f"forgetful-{seed}-{uuid.uuid4().hex[:6]}"
    remembering, forgetting = names
    for serial in range(1, 16):
        candidate = copy.deepcopy(document)
        invalid = serial > 1 and _edit(candidate, rng)
        body = dumps({**candidate, "serial": serial}, indent=rng.random() < 0.2)
        refused = await _write(conn, remembering, body)
        written += len(candidate["resources"]) if serial > 1 else 0
        state_id = await conn.fetchval("SELECT id FROM states WHERE name = $1", forgetting)
        if state_id is not None:
            memo.last_writes.forget(state_id)
        assert refused == await _write(conn, forgetting, body)
        assert (refused is not None) == invalid, refused
        if refused is None:
            document = candidate
            assert await _written(conn, remembering) == await _written(conn, forgetting)
        else:
            document["serial"] = serial  # the next write numbers after the refused one
            await _write(conn, remembering, dumps(document))
            await _write(conn, forgetting, dumps(document))
    assert skipped > written / 2  # most resources of most writes were remembered, not read


async def test_a_change_reads_the_changed_resource_alone(
    conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = generate_state(200)
    name = f"memo-read-{uuid.uuid4().hex[:6]}"
    await write_version(conn, name, dumps(document), actor="test")
    read = resources_read(monkeypatch)
    document["resources"][7]["instances"][0]["attributes"]["size"] = 12345
    await write_version(conn, name, dumps({**document, "serial": 2}), actor="test")
    assert len(read) == 1
    assert (await _written(conn, name))["summary"] == {"added": 0, "changed": 1, "removed": 0}


async def test_what_is_remembered_wrongly_is_not_used(conn) -> None:
    document = generate_state(60)
    name = f"memo-wrong-{uuid.uuid4().hex[:6]}"
    await write_version(conn, name, dumps(document), actor="test")
    state_id, version_id = await conn.fetchrow(
        """SELECT s.id, v.id FROM states s JOIN state_versions v ON v.state_id = s.id
           WHERE s.name = $1""",
        name,
    )
    remembered = memo.last_writes.resources(state_id, version_id)
    assert remembered
    # rows of another state: a write that used them would keep rows that are not its own
    wrong = {
        key: found._replace(row_ids=tuple(uuid.uuid4() for _ in found.row_ids))
        for key, found in remembered.items()
    }
    memo.last_writes.remember(state_id, version_id, wrong)
    document["resources"][3]["instances"][0]["attributes"]["size"] = 7
    await write_version(conn, name, dumps({**document, "serial": 2}), actor="test")
    other = f"memo-right-{uuid.uuid4().hex[:6]}"
    await write_version(conn, other, dumps({**document, "serial": 2}), actor="test")
    mine, theirs = await _written(conn, name), await _written(conn, other)
    assert mine["document"] == theirs["document"] and mine["edges"] == theirs["edges"]
    assert mine["summary"] == {"added": 0, "changed": 1, "removed": 0}


def test_memory_is_bounded_by_instances_the_oldest_forgotten() -> None:
    last = memo.LastWrites(max_instances=5)
    states = [uuid.uuid4() for _ in range(3)]

    def resources(count: int) -> memo.Resources:
        return {
            uuid.uuid4().bytes: memo.Remembered((), tuple(uuid.uuid4() for _ in range(count)), ())
        }

    last.remember(states[0], states[0], resources(2))
    last.remember(states[1], states[1], resources(2))
    assert last.resources(states[0], states[0])  # used: the most recent now
    last.remember(states[2], states[2], resources(2))
    assert last.resources(states[1], states[1]) is None  # the least recent, forgotten
    assert last.resources(states[0], states[0]) and last.resources(states[2], states[2])
    last.remember(states[0], uuid.uuid4(), resources(9))  # too big: nothing kept
    assert last.resources(states[0], states[0]) is None


async def test_a_document_written_again_in_another_layout_keeps_its_rows_unread(
    conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = generate_state(300)
    name = f"memo-layout-{uuid.uuid4().hex[:6]}"
    await write_version(conn, name, dumps(document), actor="test")
    normalized: list[str] = []
    row = ScannedInstance.row

    def counted(self: ScannedInstance, seen: set[str]) -> Any:
        normalized.append(self.resource.raw["name"])
        return row(self, seen)

    monkeypatch.setattr(ScannedInstance, "row", counted)
    # every resource's bytes differ: none remembered, each kept by its raw hash
    await write_version(conn, name, dumps({**document, "serial": 2}, indent=True), actor="test")
    assert len(normalized) <= 64
    assert (await _written(conn, name))["summary"] == {"added": 0, "changed": 0, "removed": 0}
