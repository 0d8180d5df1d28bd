"""Direct edges on Terraform's closed dependencies: real depth and paths, flags that
follow the versions."""

from app.graph.edges import Direction, blast_radius, neighbours, path_addresses
from app.graph.resources import find_resource
from app.graph.write.version import write_version
from tests.helpers.states import BUILTIN, WALK_LIMITS, resource, state

T = "terraform_data."


def _graph(depends: dict[str, list[str]], serial: int = 1, inputs: dict | None = None) -> bytes:
    return state(
        [
            resource(
                "terraform_data",
                name,
                provider=BUILTIN,
                attributes={"input": (inputs or {}).get(name, name)},
                depends_on=[T + d for d in targets],
            )
            for name, targets in depends.items()
        ],
        serial=serial,
    )


async def _key(conn, name: str, serial: int | None = None) -> tuple:
    found = await find_resource(conn, "s", T + name, serial)
    return (found["id"], found["version_id"])


async def _direct(conn, name: str, serial: int | None = None, *, direct: bool = True) -> list:
    key = await _key(conn, name, serial)
    pages = await neighbours(conn, [key], Direction.DEPENDENCIES, first=50, direct=direct)
    return [r["address"].removeprefix(T) for r in pages[key].rows] if key in pages else []


async def test_a_closed_chain_has_depth(conn) -> None:
    # Terraform writes d: [a, b, c], c: [a, b], b: [a]
    await write_version(
        conn, "s", _graph({"a": [], "b": ["a"], "c": ["a", "b"], "d": ["a", "b", "c"]}), actor="t"
    )
    key = await _key(conn, "a")
    page = (await blast_radius(conn, [key], limits=WALK_LIMITS, first=10))[key]
    assert [(r["address"], r["depth"], path_addresses(r["path"])) for r in page.rows] == [
        (T + "b", 1, [T + "a", T + "b"]),
        (T + "c", 2, [T + "a", T + "b", T + "c"]),
        (T + "d", 3, [T + "a", T + "b", T + "c", T + "d"]),
    ]
    assert await _direct(conn, "d") == ["c"]
    assert await _direct(conn, "d", direct=False) == ["a", "b", "c"]  # every declared edge


async def test_a_diamond_keeps_both_sides(conn) -> None:
    # d on b and c, both on a: closed d: [a, b, c]
    await write_version(
        conn, "s", _graph({"a": [], "b": ["a"], "c": ["a"], "d": ["a", "b", "c"]}), actor="t"
    )
    assert await _direct(conn, "d") == ["b", "c"]
    key = await _key(conn, "a")
    page = (await blast_radius(conn, [key], limits=WALK_LIMITS, first=10))[key]
    assert [(r["address"], r["depth"]) for r in page.rows] == [
        (T + "b", 1),
        (T + "c", 1),
        (T + "d", 2),
    ]


async def test_cycles_end_and_keep_their_edges(conn) -> None:
    # b -> c -> b, both on a; e on b and c and a
    await write_version(
        conn,
        "s",
        _graph({"a": [], "b": ["a", "c"], "c": ["a", "b"], "e": ["a", "b", "c"]}),
        actor="t",
    )
    assert await _direct(conn, "b") == ["a", "c"]  # both edges out of the cycle stay
    assert await _direct(conn, "e") == ["b", "c"]
    key = await _key(conn, "a")
    page = (await blast_radius(conn, [key], limits=WALK_LIMITS, first=10))[key]
    assert {r["address"]: r["depth"] for r in page.rows} == {T + "b": 1, T + "c": 1, T + "e": 2}


async def test_flags_follow_the_versions(conn) -> None:
    await write_version(conn, "s", _graph({"a": [], "b": ["a"], "c": ["a", "b"]}), actor="t")
    assert await _direct(conn, "c") == ["b"]
    # an attribute of b changes: the same structure, the same flags
    await write_version(
        conn, "s", _graph({"a": [], "b": ["a"], "c": ["a", "b"]}, 2, {"b": "x"}), actor="t"
    )
    assert await _direct(conn, "c") == ["b"]
    # b stops depending on a: c's row stays, and its edge to a becomes direct
    await write_version(conn, "s", _graph({"a": [], "b": [], "c": ["a", "b"]}, 3), actor="t")
    assert await _direct(conn, "c") == ["a", "b"]
    assert await _direct(conn, "c", serial=2) == ["b"]  # the older version still reads as it was
    rows = await conn.fetchval(
        "SELECT count(*) FROM resources WHERE state_id = (SELECT id FROM states WHERE name = 's') "
        "AND address = $1",
        T + "c",
    )
    assert rows == 1  # c never changed: one row shared by the three versions
    # a new resource in between makes the edge indirect again
    await write_version(conn, "s", _graph({"a": [], "b": ["a"], "c": ["a", "b"]}, 4), actor="t")
    assert await _direct(conn, "c") == ["b"]
