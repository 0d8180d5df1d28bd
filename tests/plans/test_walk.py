"""A plan's impact, one walk from all its changed instances, is what a walk per changed
instance gives merged: each member at its least depth, with the smallest of its shortest
paths and every changed instance that reaches it. Over random dependency graphs."""

import random
from typing import Any

from app.graph.across import cross_blast_radius
from app.graph.edges import Direction
from app.graph.write.version import write_version
from app.plans.impact import plan_impact
from app.plans.parse import parse_plan
from app.plans.store import submit_plan
from tests.helpers.plans import change, plan
from tests.helpers.states import resource, state


def _graph(rng: random.Random, size: int) -> list[dict[str, Any]]:
    """`size` instances, each depending on up to 3 made before it."""
    made = []
    for n in range(size):
        earlier = rng.sample(range(n), min(n, rng.randint(0, 3)))
        made.append(
            resource(
                "aws_instance",
                f"r{n}",
                attributes={"id": f"i-{n}"},
                depends_on=[f"aws_instance.r{e}" for e in earlier],
            )
        )
    return made


async def _per_root(
    conn, name: str, roots: list[str]
) -> dict[str, tuple[int, list[Any], list[str]]]:
    """Each root's radius, merged: address -> (depth, [(state, address)...], via)."""
    version = await conn.fetchval(
        """SELECT v.id FROM state_versions v JOIN states s ON s.id = v.state_id
           WHERE s.name = $1""",
        name,
    )
    best: dict[str, tuple[int, list[Any], list[str]]] = {}
    for root in roots:
        row_id = await conn.fetchval(
            """SELECT r.id FROM resources r JOIN states s ON s.id = r.state_id
               WHERE s.name = $1 AND r.address = $2""",
            name,
            root,
        )
        pages = await cross_blast_radius(
            conn, [(row_id, version)], Direction.DEPENDENTS, first=10_000
        )
        for page in pages.values():
            for r in page.rows:
                rank = (r["depth"], list(zip(r["path_states"], r["path"], strict=True)))
                held = best.get(r["address"])
                via = [*(held[2] if held else []), root]
                if held is None or rank < held[:2]:
                    best[r["address"]] = (*rank, via)
                else:
                    best[r["address"]] = (*held[:2], via)
    return {a: (d, p, sorted(v)) for a, (d, p, v) in best.items()}


async def test_one_walk_is_the_walks_per_root_merged(conn) -> None:
    rng = random.Random(20261201)
    for size in (12, 30, 60, 120):
        name = f"walk/random-{size}"
        instances = _graph(rng, size)
        await write_version(conn, name, state(instances), actor="test")
        roots = sorted(f"aws_instance.r{n}" for n in rng.sample(range(size), size // 4))
        prior = {f"aws_instance.r{n}": {"id": f"i-{n}"} for n in range(size)}
        changes = [
            change(address, ["update"], prior[address], {**prior[address], "x": 1})
            for address in roots
        ]
        parsed = parse_plan(plan(changes, prior=prior))
        row = await submit_plan(conn, name, parsed, submitter="test")
        found = await plan_impact(conn, row, cross_states=False, readable=None)
        expected = await _per_root(conn, name, roots)
        assert {
            m.address: (m.depth, list(zip(m.path_states, m.path, strict=True)), m.via)
            for m in found
        } == expected
        assert [m.depth for m in found] == sorted(m.depth for m in found)
