"""The radius picture's boxes count the same edges the walk follows: every direct edge
instance to instance between members of neighbouring depths, whether stored instance to
instance or through a resource of several instances (a fan-in is one row a reader)."""

import collections
import re
from typing import Any

import pytest

from app.graph.boxes import RadiusBoxes, radius_boxes
from app.graph.edges import Direction, blast_radius
from app.graph.resources import find_resource
from app.graph.write.version import write_version
from tests.helpers.edges import history, instance_edges
from tests.helpers.fan_in import READER, SOURCE, fan_in_state
from tests.helpers.states import WALK_LIMITS

_INDEX = re.compile(r"\[[^][]*\]$")


def _expected(
    root: str,
    members: dict[str, int],
    pairs: list[tuple[str, str]],
    direction: Direction,
    single_up_to: int,
) -> tuple[set[tuple[int, str, int, str]], set[tuple[int, str, str, int, None]]]:
    """The boxes and bundles of a radius from its members (address: depth) and the direct
    edges (dependent, dependency), computed here instance by instance."""
    placed = {**members, root: 0}
    sizes = collections.Counter(d for d in placed.values() if d > 0)

    def box(address: str) -> str:
        depth = placed[address]
        if depth == 0 or sizes[depth] <= single_up_to:
            return address
        return _INDEX.sub("", address)

    groups: dict[tuple[int, str], list[str]] = collections.defaultdict(list)
    for address, depth in members.items():
        groups[depth, box(address)].append(address)
    boxes = {(d, b, len(found), min(found)) for (d, b), found in groups.items()}
    bundles: collections.Counter[tuple[int, str, str]] = collections.Counter()
    for dependent, dependency in pairs:
        far, near = (dependent, dependency)
        if direction is Direction.DEPENDENCIES:
            far, near = near, far
        if far in placed and near in placed and placed[far] > 0 and placed[near] == placed[far] - 1:
            bundles[placed[far], box(near), box(far)] += 1
    return boxes, {(d, n, f, count, None) for (d, n, f), count in bundles.items()}


async def _check_every_root(conn: Any, name: str, single_up_to: int) -> int:
    """Boxes of every resource's radius both ways against _expected; how many edges the
    bundles counted in all."""
    pairs = [(a, b) for a, b, direct in await instance_edges(conn, name) if direct]
    addresses = [
        r["address"]
        for r in await conn.fetch(
            """SELECT r.address FROM resources r JOIN states s ON s.id = r.state_id
               WHERE s.name = $1 AND r.serial_to IS NULL ORDER BY 1""",
            name,
        )
    ]
    counted = 0
    for direction in Direction:
        for root in addresses:
            found = await find_resource(conn, name, root, None)
            key = (found["id"], found["version_id"])
            page = (
                await blast_radius(conn, [key], direction, limits=WALK_LIMITS, first=100_000)
            ).get(key)
            members = {r["address"]: r["depth"] for r in page.rows} if page else {}
            got = await radius_boxes(conn, key, root, direction, single_up_to=single_up_to)
            boxes, bundles = _expected(root, members, pairs, direction, single_up_to)
            assert set(got.sizes) == boxes, (direction, root)
            assert set(got.edges) == bundles, (direction, root)
            assert len(got.edges) == len(bundles)
            counted += sum(n for _, _, _, n, _ in got.edges)
    return counted


@pytest.mark.parametrize("single_up_to", [1, 100])
async def test_boxes_count_every_direct_edge_between_neighbouring_depths(
    conn: Any, single_up_to: int
) -> None:
    name = f"boxes-{single_up_to}"
    for body in history():
        await write_version(conn, name, body, actor="test")
    assert await _check_every_root(conn, name, single_up_to) > 0


async def test_boxes_of_a_fan_in_through_its_resource(conn: Any) -> None:
    """Readers depending on a counted resource: stored one row a reader, each reader's
    bundle counts every source instance at the depth before it."""
    await write_version(conn, "boxes-fan", fan_in_state(12, 9), actor="test")
    counted = await _check_every_root(conn, "boxes-fan", 4)
    # from each of the 12 sources, 9 readers (one bundle); from each reader, 12 sources
    assert counted == 12 * 9 + 9 * 12
    found = await find_resource(conn, "boxes-fan", f'{READER}["k0003"]', None)
    key = (found["id"], found["version_id"])
    await blast_radius(conn, [key], Direction.DEPENDENCIES, limits=WALK_LIMITS, first=1)
    got = await radius_boxes(
        conn, key, f'{READER}["k0003"]', Direction.DEPENDENCIES, single_up_to=4
    )
    assert got == RadiusBoxes(
        sizes=[(1, SOURCE, 12, f"{SOURCE}[0]")],
        edges=[(1, f'{READER}["k0003"]', SOURCE, 12, None)],
    )
