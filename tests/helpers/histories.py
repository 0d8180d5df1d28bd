"""Histories of one state: versions written and read back as posted, generated
histories (hypothesis), and what a history's rows must keep."""

import copy
import json
import random
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from app.graph.readback import export_state
from app.graph.write.version import write_version
from app.jsonutil import dumps
from app.tfstate.parse import MAX_SERIAL
from tests.helpers.states import PASSWORD, resource, state
from tests.helpers.strategies import states


def as_numbers(body: bytes) -> object:
    """Parse with numbers as decimals: JSONB keeps a number's value, not its spelling
    (3.4e16 comes back as 34000000000000000), so compare values exactly."""
    return json.loads(body, parse_float=Decimal, parse_int=Decimal)


async def exports_as_posted(conn: Any, name: str, posted: dict[int, bytes]) -> None:
    for serial, body in posted.items():
        exported = await export_state(conn, name, serial=serial, actor="test")
        # numbers compared by value: jsonb keeps a number's value, not its spelling
        assert as_numbers(dumps(exported)) == as_numbers(body), f"{name} at serial {serial}"


def evolve(document: dict[str, Any], step: int, rng: random.Random) -> dict[str, Any]:
    """The next version of `document`: one kind of change per step, in turn."""
    doc = copy.deepcopy(document)
    doc["serial"] = document["serial"] + 1
    resources = doc.setdefault("resources", [])
    kind = step % 6
    if kind == 0:  # an instance changes
        for res in resources:
            res["instances"][0]["attributes"] = {"changed": step}
            break
    elif kind == 1:  # a resource is added, in the middle
        resources.insert(
            len(resources) // 2,
            resource("terraform_data", f"added{step}", keys=[0, 1], attributes={"n": step}),
        )
    elif kind == 2 and resources:  # a resource goes
        resources.pop(rng.randrange(len(resources)))
    elif kind == 3:  # outputs change
        doc["outputs"] = {"step": {"value": step, "type": "number"}, **doc.get("outputs", {})}
    elif kind == 4 and resources:  # a resource moves to another module
        moved = resources[rng.randrange(len(resources))]
        moved["module"] = f"module.moved{step}"
    elif kind == 5:  # the same resources in another order
        rng.shuffle(resources)
    return doc


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """2-5 versions of one state: each keeps a random share of the previous version's
    resources (some changed), adds new ones, and may reorder them."""
    lineage = str(draw(st.uuids()))
    serial = draw(st.integers(0, MAX_SERIAL - 10))  # a few versions follow
    versions = []
    previous: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(2, 5))):
        document = draw(states())
        kept = [
            r
            for r in previous
            if draw(st.booleans())
            and all(
                (r.get("module"), r["mode"], r["type"], r["name"])
                != (n.get("module"), n["mode"], n["type"], n["name"])
                for n in document.get("resources", [])
            )
        ]
        resources = kept + document.get("resources", [])
        if draw(st.booleans()):
            resources = draw(st.permutations(resources))
        document["resources"] = resources
        document["serial"], document["lineage"] = serial, lineage
        serial += draw(st.integers(1, 3))
        versions.append(document)
        previous = resources
    return versions


async def write_all(conn: Any, name: str, bodies: list[bytes]) -> dict[int, bytes]:
    for body in bodies:
        await write_version(conn, name, body, actor="test")
    return {json.loads(body)["serial"]: body for body in bodies}


_HELD = """EXISTS (SELECT 1 FROM state_versions v
                  WHERE v.state_id = x.state_id AND v.serial >= x.serial_from
                    AND (x.serial_to IS NULL OR v.serial < x.serial_to))"""


async def assert_rows_consistent(conn: Any) -> None:
    """No row is held by no version, and each state's row keeps its highest serial."""
    for table in ("resources", "resource_dependencies", "outputs"):
        orphans = await conn.fetchval(f"SELECT count(*) FROM {table} x WHERE NOT {_HELD}")
        assert orphans == 0, table
    wrong = await conn.fetch(
        """SELECT s.name, s.current_serial FROM states s
           WHERE s.current_serial IS DISTINCT FROM
                 (SELECT max(v.serial) FROM state_versions v WHERE v.state_id = s.id)"""
    )
    assert wrong == []


def history_version(serial: int) -> bytes:
    """Serial 1..30: the vpc changes every 10th serial; the bucket exists from 5 to 14
    and again from 20; the db's password changes at 12 (sensitive); the queue moves from
    the root module to module.q at 25."""
    resources = [resource("aws_vpc", "main", attributes={"cidr": f"10.{serial // 10}.0.0/16"})]
    if 5 <= serial < 15 or serial >= 20:
        resources.append(resource("aws_s3_bucket", "b", attributes={"acl": "private"}))
    password = "one" if serial < 12 else "two"
    resources.append(
        resource(
            "aws_db_instance",
            "db",
            attributes={"password": password, "size": 1},
            sensitive=PASSWORD,
        )
    )
    resources.append(resource("aws_sqs_queue", "q", module="module.q" if serial >= 25 else None))
    return state(resources, serial=serial)
