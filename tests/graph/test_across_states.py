"""The walks across states that Citus takes a state at a time (app/graph/across_closure.py,
and a level at a time when a resource is reached in two versions of its state) answer as
the single node's one statement: pages of the radius both ways, and a plan's impact
(`reach`), over random states that read each other's outputs (cycles between states and
walks from old versions included). Run on a single node, the connection told it is
sharded (the statements name their states either way)."""

import random
from typing import Any

from app.graph import across_steps
from app.graph.across import cross_blast_radius, reach
from app.graph.edges import Direction
from tests.helpers.across import HERE, post_state
from tests.helpers.links import remote
from tests.helpers.states import resource, state


def _id(k: int, i: int) -> str:
    """Instance i's id in state k (long enough to trace an output to it)."""
    return f"instance-{k}-{i}"


def _state(rng: random.Random, k: int, states: int, serial: int) -> bytes:
    """State s{k}: instances depending on earlier ones and on the data sources reading
    other states' outputs; each output is the id of one of its instances."""
    size = rng.randint(2, 7)
    reads = rng.sample([n for n in range(states) if n != k], rng.randint(0, min(2, states - 1)))
    made = [remote(f"s{n}", HERE + f"s{n}", {f"o{j}": _id(n, j) for j in range(2)}) for n in reads]
    sources = [f"data.terraform_remote_state.s{n}" for n in reads]
    for i in range(size):
        earlier = [f"aws_instance.r{e}" for e in rng.sample(range(i), min(i, rng.randint(0, 2)))]
        made.append(
            resource(
                "aws_instance",
                f"r{i}",
                attributes={"id": _id(k, i)},
                depends_on=earlier + rng.sample(sources, rng.randint(0, len(sources))),
            )
        )
    # the outputs' values are the ids of r0 and r1: derived from them
    outputs = {f"o{j}": {"value": _id(k, j), "type": "string"} for j in range(2)}
    made[-1]["instances"][0]["attributes"]["serial"] = serial
    return state(made, serial=serial, outputs=outputs)


def _raw(conn: Any) -> Any:
    """The pool's connection behind its proxy (what shards.sharded asks)."""
    return getattr(conn, "_con", conn)


async def _answers(conn: Any, keys: list[tuple[Any, Any]], sharded: bool) -> Any:
    _raw(conn).sharded = sharded
    try:
        found = []
        for key in keys:
            for direction in Direction:
                for first, depth in ((1000, None), (3, None), (1000, 1)):
                    pages = await cross_blast_radius(
                        conn, [key], direction, first=first, max_depth=depth
                    )
                    found.append(
                        {k: (p.rows, p.total, p.has_next, p.beyond) for k, p in pages.items()}
                    )
        return found
    finally:
        _raw(conn).sharded = False


async def _impacts(conn: Any, versions: list[Any], sharded: bool) -> Any:
    _raw(conn).sharded = sharded
    try:
        found = []
        for version_id, addresses in versions:
            for across in (True, False):
                walked = await reach(conn, version_id, addresses, across=across)
                found.append((walked.roots, walked.members, sorted(set(walked.hops))))
        return found
    finally:
        _raw(conn).sharded = False


async def test_walks_in_states_answer_as_one_statement(client, conn, monkeypatch) -> None:
    in_states = across_steps.walk_states
    told = {"walks": 0, "two versions": 0, "across": 0}

    async def counted(*args: Any, **kwargs: Any) -> Any:
        walked = await in_states(*args, **kwargs)
        told["walks"] += 1
        told["two versions"] += walked is None
        return walked

    async def none(*args: Any, **kwargs: Any) -> Any:
        # (within one state a resource is reached in one version only)
        return None if kwargs.get("across", True) else await in_states(*args, **kwargs)

    for seed in range(12):
        await conn.execute("TRUNCATE states CASCADE")
        rng = random.Random(seed)
        states = rng.randint(2, 4)
        # the second version: the same graph (its rows shared with the first) but for
        # one instance's attributes, or another graph
        same = rng.sample(range(states), rng.randint(1, states))
        for serial in (1, 2):
            for k in range(states):
                again = random.Random(f"{seed} {k} {serial if k not in same else 1}")
                await post_state(client, f"s{k}", _state(again, k, states, serial))
        keys = [
            (r["id"], r["version_id"])
            for r in await conn.fetch(
                """SELECT r.id, v.id AS version_id FROM resources r
                   JOIN state_versions v ON v.state_id = r.state_id
                    AND r.serial_from <= v.serial
                    AND (r.serial_to IS NULL OR r.serial_to > v.serial)
                   ORDER BY v.serial, r.address"""
            )
        ]
        picked = rng.sample(keys, min(len(keys), 12))
        one = await _answers(conn, picked, False)
        told["across"] += sum(
            len(set(row["path_states"])) > 1
            for answer in one
            for page in answer.values()
            for row in page[0]
        )
        monkeypatch.setattr(across_steps, "walk_states", counted)
        assert await _answers(conn, picked, True) == one
        # and a level at a time, as when a resource is reached in two versions
        monkeypatch.setattr(across_steps, "walk_states", none)
        assert await _answers(conn, picked, True) == one
        versions = []
        for v in await conn.fetch("SELECT id, state_id, serial FROM state_versions"):
            addresses = [
                r["address"]
                for r in await conn.fetch(
                    """SELECT address FROM resources WHERE state_id = $1 AND serial_from <= $2
                       AND (serial_to IS NULL OR serial_to > $2)""",
                    v["state_id"],
                    v["serial"],
                )
            ]
            versions.append((v["id"], rng.sample(addresses, min(len(addresses), 3))))
        impacts = await _impacts(conn, versions, False)
        assert await _impacts(conn, versions, True) == impacts
        monkeypatch.setattr(across_steps, "walk_states", counted)
        assert await _impacts(conn, versions, True) == impacts
    # the walks went across states, and some came back to another version of their own
    assert told["across"] and 0 < told["two versions"] < told["walks"]
