"""A state of dense fan-in: `keyed` for_each instances, each depending on a `counted`
count resource (2,500 x 2,500 by default: about 660 KB, 6.25 million edges instance to
instance)."""

import json
from typing import Any

from app.graph.edges import Direction, blast_radius, neighbours
from app.graph.resources import find_resource
from tests.helpers.states import WALK_LIMITS

SOURCE = "terraform_data.source"
READER = "terraform_data.reader"


def fan_in_state(counted: int = 2_500, keyed: int = 2_500, *, serial: int = 1) -> bytes:
    def instance(key: int | str, extra: dict[str, Any]) -> dict[str, Any]:
        return {
            "index_key": key,
            "schema_version": 0,
            "attributes": {"id": f"{key}-{serial:04d}"},
            "sensitive_attributes": [],
            **extra,
        }

    resources = [
        {
            "mode": "managed",
            "type": "terraform_data",
            "name": "reader",
            "provider": 'provider["terraform.io/builtin/terraform"]',
            "each": "map",
            "instances": [instance(f"k{i:04d}", {"dependencies": [SOURCE]}) for i in range(keyed)],
        },
        {
            "mode": "managed",
            "type": "terraform_data",
            "name": "source",
            "provider": 'provider["terraform.io/builtin/terraform"]',
            "each": "list",
            "instances": [instance(i, {}) for i in range(counted)],
        },
    ]
    return json.dumps(
        {
            "version": 4,
            "terraform_version": "1.15.5",
            "serial": serial,
            "lineage": "fan-in-lineage",
            "outputs": {},
            "resources": resources,
        }
    ).encode()


async def resource_key(conn: Any, name: str, address: str) -> tuple[Any, Any]:
    """The (row id, version id) of `address` in state `name`'s current version."""
    found = await find_resource(conn, name, address, None)
    return (found["id"], found["version_id"])


async def read_as_fan_in(conn: Any, name: str) -> tuple[Any, Any]:
    """Checks that the 2,500 x 2,500 fan-in state `name` reads as its instance edges: a
    source instance's dependents are every reader, at depth 1; a reader depends on every
    source instance directly. Returns that reader's key."""
    source = await resource_key(conn, name, f"{SOURCE}[7]")
    page = (await blast_radius(conn, [source], limits=WALK_LIMITS, first=3))[source]
    assert page.total == 2_500
    assert [(r["address"], r["depth"]) for r in page.rows] == [
        (f'{READER}["k0000"]', 1),
        (f'{READER}["k0001"]', 1),
        (f'{READER}["k0002"]', 1),
    ]
    reader = await resource_key(conn, name, f'{READER}["k1234"]')
    found = await neighbours(conn, [reader], Direction.DEPENDENCIES, first=5_000, direct=True)
    assert len(found[reader].rows) == 2_500
    return reader
