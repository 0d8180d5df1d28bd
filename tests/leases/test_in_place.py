"""A merged write stores what a plain POST of the merged document stores: the same rows,
edges, outputs, lineage and version fields, whether it was written in place (from the
head's rows and the changed instances alone: app/graph/write/patch.py) or whole (a
change of dependencies, of instances added or removed, of outputs, or of a value an
output holds)."""

import copy
import json
from collections.abc import Callable
from typing import Any

import asyncpg
import pytest

from app.access import Principal, Role
from app.graph import raw
from app.graph.write.version import write_version
from app.leases import backend, store
from app.leases.merge import changes, merge
from app.plans.parse import parse_plan
from app.tfstate.address import instance_address
from tests.helpers.histories import assert_rows_consistent
from tests.helpers.states import BUILTIN, PASSWORD, resource

WHO = Principal("tf", Role.WRITE)
Document = dict[str, Any]


def base() -> Document:
    db = resource(
        "terraform_data",
        "db",
        attributes={"id": "db-0001", "password": "hunter2-old", "size": 1},
        provider=BUILTIN,
        sensitive=PASSWORD,
    )
    web = resource(
        "terraform_data",
        "web",
        attributes={"id": "web", "input": "v0"},
        provider=BUILTIN,
        keys=[0, 1, 2],
        depends_on=["terraform_data.db"],
    )
    for n, instance in enumerate(web["instances"]):
        instance["attributes"] = {"id": f"web-{n}", "input": "v0"}
    other = resource(
        "terraform_data", "other", attributes={"id": "other-1", "input": "x"}, provider=BUILTIN
    )
    return {
        "version": 4,
        "terraform_version": "1.15.5",
        "serial": 1,
        "lineage": "lineage-in-place",
        "outputs": {"db_id": {"value": "db-0001", "type": "string"}},
        "resources": [db, other, web],
    }


def _instance(doc: Document, name: str, index: int | None = None) -> dict[str, Any]:
    found = next(r for r in doc["resources"] if r["name"] == name)
    instance: dict[str, Any] = found["instances"][index or 0]
    return instance


def update(doc: Document) -> None:
    _instance(doc, "web", 1)["attributes"]["input"] = "v1"


def sensitive(doc: Document) -> None:
    _instance(doc, "db")["attributes"].update(password="hunter2-new", size=2)


def dependencies(doc: Document) -> None:
    _instance(doc, "web", 2)["dependencies"] = ["terraform_data.db", "terraform_data.other"]


def added_and_removed(doc: Document) -> None:
    web = next(r for r in doc["resources"] if r["name"] == "web")
    added = copy.deepcopy(web["instances"][2])
    added.update(index_key=3, attributes={"id": "web-3", "input": "v0"})
    web["instances"].append(added)
    doc["resources"] = [r for r in doc["resources"] if r["name"] != "other"]


def output(doc: Document) -> None:
    doc["outputs"]["db_id"]["value"] = "db-0002"
    doc["outputs"]["url"] = {"value": "https://db", "type": "string", "sensitive": True}


def holds_output_value(doc: Document) -> None:
    _instance(doc, "other")["attributes"]["input"] = "db-0001"  # the output db_id's value


CASES: dict[str, tuple[Callable[[Document], None], bool]] = {
    # change, and whether the merge is of instances where they are
    "update": (update, True),
    "sensitive": (sensitive, True),
    "dependencies": (dependencies, False),
    "added_and_removed": (added_and_removed, False),
    "output": (output, False),
    "holds_output_value": (holds_output_value, True),
}


def addresses(doc: Document) -> dict[str, Any]:
    """Each instance by its address."""
    found = {}
    for r in doc["resources"]:
        for i in r["instances"]:
            key = instance_address(
                r.get("module"), r["mode"], r["type"], r["name"], i.get("index_key"), None
            )
            found[key] = i
    return found


def plan(before: Document, after: Document) -> dict[str, Any]:
    """The plan of `after` made from `before`: every instance and output it changes."""
    old, new = addresses(before), addresses(after)
    changed = [a for a in old.keys() | new.keys() if old.get(a) != new.get(a)]
    actions = {True: ["update"], False: ["create"]}

    def action(a: str) -> list[str]:
        return ["delete"] if a not in new else actions[a in old]

    outputs = {
        n: {"actions": ["update"], "before": 1, "after": 2}
        for n in before["outputs"].keys() | after["outputs"].keys()
        if before["outputs"].get(n) != after["outputs"].get(n)
    }
    return {
        "format_version": "1.2",
        "terraform_version": "1.15.5",
        "resource_changes": [
            {
                "address": a,
                "mode": "managed",
                "type": "terraform_data",
                "name": a.split(".")[1].split("[")[0],
                "provider_name": "terraform.io/builtin/terraform",
                "change": {
                    "actions": action(a),
                    "before": (old.get(a) or {}).get("attributes"),
                    "after": (new.get(a) or {}).get("attributes"),
                },
            }
            for a in sorted(changed)
        ],
        "output_changes": outputs,
        "prior_state": {
            "format_version": "1.0",
            "values": {
                "root_module": {
                    "resources": [
                        {
                            "address": a,
                            "mode": "managed",
                            "type": "terraform_data",
                            "values": v["attributes"],
                        }
                        for a, v in old.items()
                    ]
                }
            },
        },
    }


async def graph(conn: asyncpg.Connection, name: str) -> dict[str, Any]:
    """What the state's head holds, ids aside."""
    state_id = await conn.fetchval("SELECT id FROM states WHERE name = $1", name)
    version = await conn.fetchrow(
        """SELECT serial, lineage, terraform_version, extra, omitted, resource_count, layout
           FROM state_versions WHERE state_id = $1 ORDER BY serial DESC LIMIT 1""",
        state_id,
    )
    rows = await conn.fetch(
        """SELECT address, to_jsonb(r) - 'id' - 'state_id' - 'state_version_id' - 'secrets'
                  - 'serial_from' AS row, r.secrets IS NULL AS plain
           FROM resources r WHERE state_id = $1 AND serial_to IS NULL ORDER BY address""",
        state_id,
    )
    edges = await conn.fetch(
        """SELECT f.address AS source, t.address AS target, d.direct
           FROM resource_dependencies d
           JOIN resources f ON f.id = d.from_resource_id
           JOIN resources t ON t.id = d.to_resource_id
           WHERE d.state_id = $1 AND d.serial_to IS NULL ORDER BY 1, 2""",
        state_id,
    )
    outputs = await conn.fetch(
        """SELECT name, to_jsonb(o) - 'id' - 'state_id' - 'state_version_id' - 'secrets'
                  - 'serial_from' AS row, o.secrets IS NULL AS plain
           FROM outputs o WHERE state_id = $1 AND serial_to IS NULL ORDER BY name""",
        state_id,
    )
    lineage = await conn.fetch(
        """SELECT l.output_name, r.address, l.path FROM output_lineage l
           JOIN resources r ON r.id = l.resource_id
           WHERE l.state_id = $1 AND l.serial_to IS NULL ORDER BY 1, 2, 3""",
        state_id,
    )
    return {
        "version": dict(version),
        "rows": [dict(r) for r in rows],
        "edges": [dict(r) for r in edges],
        "outputs": [dict(r) for r in outputs],
        "lineage": [dict(r) for r in lineage],
    }


async def head_bytes(conn: asyncpg.Connection, name: str) -> bytes:
    version = await raw.raw_version(conn, name)
    assert version is not None
    return await raw.whole_raw(conn, version)


@pytest.mark.parametrize("case", CASES)
async def test_a_merged_write_stores_what_a_plain_post_of_its_document_does(
    conn: asyncpg.Connection, case: str
) -> None:
    change, in_place = CASES[case]
    before = base()
    after = copy.deepcopy(before)
    change(after)
    after["serial"] = 2
    merged = merge(copy.deepcopy(before), before, after)
    assert (merged.in_place is not None) is in_place

    body = json.dumps(before).encode()
    for name in ("leased", "plain"):
        await write_version(conn, name, body, actor="test")
    lease = await store.acquire(conn, "leased", parse_plan(plan(before, after)), who=WHO)
    wrote = await backend.merged_write(conn, lease, json.dumps(after).encode(), who=WHO)
    assert wrote.serial == 2 and wrote.outside == []
    merged_bytes = await head_bytes(conn, "leased")
    assert json.loads(merged_bytes) == after  # the head is the document written
    await write_version(conn, "plain", merged_bytes, actor="test")

    leased, plain = await graph(conn, "leased"), await graph(conn, "plain")
    assert leased == plain
    assert leased["rows"] and leased["edges"] and leased["outputs"]
    await assert_rows_consistent(conn)


async def test_a_change_in_place_reads_and_writes_the_changed_rows_alone(
    conn: asyncpg.Connection,
) -> None:
    """Its version shares every other row, and the merge marks it so; one made on a
    version that is no longer the head is written whole, the same."""
    before = base()
    after = copy.deepcopy(before)
    update(after)
    after["serial"] = 2
    found = changes(before, after)
    merged = merge(before, before, after, found)
    assert merged.in_place == (2,)  # the resource `web`, at its place
    assert merged.document is not None and merged.document["resources"][0] is before["resources"][0]

    await write_version(conn, "leased", json.dumps(before).encode(), actor="test")
    lease = await store.acquire(conn, "leased", parse_plan(plan(before, after)), who=WHO)
    await backend.merged_write(conn, lease, json.dumps(after).encode(), who=WHO)
    opened = await conn.fetch(
        "SELECT address FROM resources WHERE serial_from = 2 ORDER BY address"
    )
    assert [r["address"] for r in opened] == ["terraform_data.web[1]"]
