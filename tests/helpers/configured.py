"""A configured version's edges as they were copied instance to instance before
migration 0031 (every declared pair expanded: app/graph/hops.py pairs_sql), and a check
that the reads of the copy at its grain give what that copy gave."""

import collections
from typing import Any

from app.configuration import edges as configured
from app.configuration.edges import reasoned_edges
from app.configuration.parse import parse_configuration
from app.configuration.store import PUSH, record_configuration
from app.graph.boxes import radius_boxes
from app.graph.edges import Direction, blast_radius, neighbours
from app.graph.hops import pairs_sql
from app.graph.queries import valid_at
from app.graph.write.version import write_version
from tests.helpers.configurations import config_resource, configuration, module, refs
from tests.helpers.edges import history
from tests.helpers.fan_in import fan_in_state
from tests.helpers.states import WALK_LIMITS

# The copy of version ($1 state, $2 serial) with the references of configuration $3, one
# row per declared pair instance to instance, as migration 0029's copy made it.
_OLD_SELECT = f"""
    WITH addresses AS (
        SELECT r.id, config_address(r.address) AS address FROM resources r
        WHERE {valid_at("r")}),
    refs AS (
        SELECT DISTINCT ON (x.source, x.target) x.source, x.target, x.reason, x.attributes
        FROM configuration_references x WHERE x.state_id = $1 AND x.configuration_id = $3
        ORDER BY x.source, x.target, x.reason DESC)
    SELECT $1::uuid AS state_id, $2::bigint AS serial, d.from_resource_id, d.to_resource_id,
           coalesce(x.reason, 'declared') AS reason, coalesce(x.attributes, '{{}}') AS attributes,
           d.direct OR x.reason IS NOT NULL AS direct
    FROM {pairs_sql("$1", "$2")} d
    JOIN addresses f ON f.id = d.from_resource_id
    JOIN addresses t ON t.id = d.to_resource_id
    LEFT JOIN refs x ON x.source = f.address AND x.target = t.address
    WHERE d.direct OR x.reason IS NOT NULL"""
# The copy as written before migration 0031 (a database at 0030: no `kind` column), for
# app.configuration.edges._CONFIGURE.
OLD_CONFIGURE = f"""INSERT INTO configured_edges
    (state_id, serial, from_resource_id, to_resource_id, reason, attributes, direct)
    SELECT state_id, serial, from_resource_id, to_resource_id, reason, attributes, direct
    FROM ({_OLD_SELECT}) o"""

Pair = tuple[str, str]  # (dependent, dependency) addresses


async def _version(conn: Any, name: str, serial: int) -> tuple[Any, Any, Any]:
    state_id = await conn.fetchval("SELECT id FROM states WHERE name = $1", name)
    row = await conn.fetchrow(
        """SELECT v.id AS version_id, cv.configuration_id FROM state_versions v
           JOIN configured_versions cv ON cv.state_id = v.state_id AND cv.serial = v.serial
           WHERE v.state_id = $1 AND v.serial = $2""",
        state_id,
        serial,
    )
    assert row is not None, (name, serial)
    return state_id, row["version_id"], row["configuration_id"]


async def instance_grain_copy(
    conn: Any, name: str, serial: int
) -> dict[Pair, tuple[str, list[str], bool]]:
    """The configured version's copy as made instance to instance: (dependent,
    dependency) addresses to (reason, attributes, direct)."""
    state_id, _, configuration_id = await _version(conn, name, serial)
    address = await _addresses(conn, state_id)
    return {
        (address[r["from_resource_id"]], address[r["to_resource_id"]]): (
            r["reason"],
            list(r["attributes"]),
            r["direct"],
        )
        for r in await conn.fetch(_OLD_SELECT, state_id, serial, configuration_id)
    }


async def _addresses(conn: Any, state_id: Any) -> dict[Any, str]:
    return {
        r["id"]: r["address"]
        for r in await conn.fetch("SELECT id, address FROM resources WHERE state_id = $1", state_id)
    }


def _depths(root: str, pairs: set[Pair], direction: Direction) -> dict[str, int]:
    """Each member of `root`'s radius over `pairs` at its shortest depth."""
    nexts: dict[str, set[str]] = collections.defaultdict(set)
    for dependent, dependency in pairs:
        if direction is Direction.DEPENDENTS:
            nexts[dependency].add(dependent)
        else:
            nexts[dependent].add(dependency)
    depths, level, depth = {root: 0}, [root], 0
    while level:
        depth += 1
        level = sorted({n for a in level for n in nexts[a] if n not in depths})
        depths.update({n: depth for n in level})
    del depths[root]
    return depths


def _bundles(
    root: str, members: dict[str, int], copy: dict[Pair, tuple[str, list[str], bool]], d: Direction
) -> set[tuple[int, str, str, int, str | None]]:
    """The radius picture's bundles with one member a box (single_up_to large): an edge
    between members of neighbouring depths, its reason when a configuration gives one."""
    placed = {**members, root: 0}
    found = set()
    for (dependent, dependency), (reason, _, direct) in copy.items():
        far, near = (
            (dependent, dependency) if d is Direction.DEPENDENTS else (dependency, dependent)
        )
        if direct and far in placed and near in placed and placed[far] == placed[near] + 1:
            found.add((placed[far], near, far, 1, reason))
    return found


def _far(pair: Pair, of: str, backwards: bool) -> str | None:
    """The other end of `pair` from `of` one way, or None."""
    near, far = (pair[1], pair[0]) if backwards else pair
    return far if near == of else None


async def check_reads(conn: Any, name: str, serial: int, *, boxes: bool = True) -> int:
    """Neighbours (direct), reasoned edges both ways, blast radius both ways and (with
    `boxes`) the radius picture of every resource of the configured version at `serial`
    read as from its copy instance to instance; returns how many copied pairs that is."""
    state_id, version_id, _ = await _version(conn, name, serial)
    copy = await instance_grain_copy(conn, name, serial)
    address = await _addresses(conn, state_id)
    declared = {
        (address[r["from_resource_id"]], address[r["to_resource_id"]])
        for r in await conn.fetch(f"SELECT d.* FROM {pairs_sql('$1', '$2')} d", state_id, serial)
    }
    direct = {pair for pair, (_, _, flag) in copy.items() if flag}
    ids = await conn.fetch(
        f"SELECT r.id, r.address FROM resources r WHERE {valid_at('r')} ORDER BY r.address",
        state_id,
        serial,
    )
    keys = [(r["id"], version_id) for r in ids]
    at = {key: r["address"] for key, r in zip(keys, ids, strict=True)}
    for direction in Direction:
        backwards = direction is Direction.DEPENDENTS

        found = await neighbours(conn, keys, direction, first=100_000, direct=True)
        edges = await reasoned_edges(conn, keys, referenced_by=backwards, limit=100_000)
        radius = await blast_radius(conn, keys, direction, limits=WALK_LIMITS, first=100_000)
        for key, of in at.items():
            hop = found.get(key)
            assert {r["address"] for r in (hop.rows if hop else [])} == {
                far for pair in direct if (far := _far(pair, of, backwards))
            }, (direction, of)
            expected = set()
            for pair in declared:
                if far := _far(pair, of, backwards):
                    reason, attributes, flag = copy.get(pair, ("declared", [], False))
                    expected.add((far, reason, tuple(attributes), flag))
            got = {
                (r["address"], r["reason"], tuple(r["attributes"]), r["direct"]) for r in edges[key]
            }
            assert got == expected, (direction, of)
            page = radius.get(key)
            members = {r["address"]: r["depth"] for r in page.rows} if page else {}
            assert members == _depths(of, direct, direction), (direction, of)
            if boxes and members:
                picture = await radius_boxes(conn, key, of, direction, single_up_to=1_000_000)
                assert set(picture.edges) == _bundles(of, members, copy, direction), (direction, of)
    return len(copy)


def _data(name: str, *references: str, depends_on: list[str] | None = None) -> dict[str, Any]:
    expressions = {"input": refs(*(f"terraform_data.{r}.id" for r in references))}
    return config_resource(
        f"terraform_data.{name}", expressions if references else None, depends_on=depends_on
    )


def fan_in_configuration() -> dict[str, Any]:
    """The readers reference the counted source."""
    return configuration(module([_data("reader", "source"), _data("source")]))


def history_configuration() -> dict[str, Any]:
    """References for tests/helpers/edges.py history(): some of the reduction's edges,
    some it drops (top -> net), depends_on (app -> sub), a cycle's one way."""
    return configuration(
        module(
            [
                _data("base"),
                _data("net", "base"),
                _data("sub", "net"),
                _data("app", "net", depends_on=["terraform_data.sub"]),
                _data("one"),
                _data("cyc", "loop"),
                _data("loop"),
                _data("top", "net"),
            ]
        )
    )


async def configure(conn: Any, name: str, section: dict[str, Any]) -> None:
    """Records `section` (a plan's `configuration`) as state `name`'s configuration."""
    await record_configuration(
        conn, name, parse_configuration(section), origin=PUSH, submitter="test"
    )


async def configured_rows(conn: Any, name: str, serial: int | None = None) -> int:
    """The configured_edges rows of state `name` (at `serial`; None: all its versions)."""
    state_id = await conn.fetchval("SELECT id FROM states WHERE name = $1", name)
    return await conn.fetchval(
        """SELECT count(*) FROM configured_edges
           WHERE state_id = $1 AND ($2::bigint IS NULL OR serial = $2)""",
        state_id,
        serial,
    )


async def write_old_copies(conn: Any, monkeypatch: Any) -> dict[str, int]:
    """States configured with their copies made instance to instance (before 0031): the
    rows each has."""
    monkeypatch.setattr(configured, "_CONFIGURE", OLD_CONFIGURE)
    versions = history()
    await write_version(conn, "old-history", versions[0], actor="test")
    await configure(conn, "old-history", history_configuration())
    await write_version(conn, "old-history", versions[1], actor="test")
    await write_version(conn, "old-fan", fan_in_state(40, 30), actor="test")
    await configure(conn, "old-fan", fan_in_configuration())
    monkeypatch.undo()
    return {name: await configured_rows(conn, name) for name in ("old-history", "old-fan")}


async def check_converted(conn: Any, before: dict[str, int]) -> None:
    """The copies converted: the fan-in a row a reader, every read as before."""
    assert before["old-fan"] == 40 * 30
    assert await configured_rows(conn, "old-fan") == 30
    assert await configured_rows(conn, "old-history") < before["old-history"]
    for serial in (1, 2):
        await check_reads(conn, "old-history", serial)
    await check_reads(conn, "old-fan", 1)
