"""What a plan reaches: the blast radius (DEPENDENTS) of every instance it updates,
replaces or deletes, merged: each member once, at its shortest depth from any of them,
with one shortest path and every changed instance that reaches it (`via`).

The walk is app/graph/across.py's, one statement over all the roots."""

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from app.graph.across import cross_blast_radius
from app.graph.edges import Direction
from app.plans.store import impact_roots

# A radius is read whole: the merge needs every root's members.
_WHOLE = 1 << 30


@dataclass(frozen=True)
class Member:
    state: str
    address: str
    depth: int
    path: list[str]
    path_states: list[str]
    via: list[str]  # the changed instances that reach it, by address
    row_id: UUID


def merge(walks: dict[str, list[dict[str, Any]]]) -> list[Member]:
    """Each root's members (root address -> rows of state_name, address, depth, path,
    path_states, id), merged: a member once, at its least depth (of equal ones, the
    smallest path), with the roots reaching it; by depth, state, address. Pure."""
    best: dict[tuple[str, str], dict[str, Any]] = {}
    via: dict[tuple[str, str], set[str]] = {}
    for root in sorted(walks):
        for row in walks[root]:
            key = (row["state_name"], row["address"])
            via.setdefault(key, set()).add(root)
            rank = (row["depth"], list(zip(row["path_states"], row["path"], strict=True)))
            held = best.get(key)
            if held is None or rank < (
                held["depth"],
                list(zip(held["path_states"], held["path"], strict=True)),
            ):
                best[key] = row
    return [
        Member(
            state=key[0],
            address=key[1],
            depth=row["depth"],
            path=list(row["path"]),
            path_states=list(row["path_states"]),
            via=sorted(via[key]),
            row_id=row["id"],
        )
        for key, row in sorted(best.items(), key=lambda kv: (kv[1]["depth"], *kv[0]))
    ]


async def plan_impact(
    conn: asyncpg.Connection,
    plan: asyncpg.Record,
    *,
    cross_states: bool,
    readable: list[str] | None,
) -> list[Member]:
    """The plan's impact: within its state, or with `cross_states` on through the states
    that read its outputs (those `readable` only)."""
    roots = await impact_roots(conn, plan)
    if not roots:
        return []
    pages = await cross_blast_radius(
        conn, roots, Direction.DEPENDENTS, first=_WHOLE, readable=readable
    )
    addresses = {
        r["id"]: r["address"]
        for r in await conn.fetch(
            "SELECT id, address FROM resources WHERE state_id = $1 AND id = ANY($2::uuid[])",
            plan["state_id"],
            [row_id for row_id, _ in roots],
        )
    }
    walks: dict[str, list[dict[str, Any]]] = {}
    for (row_id, _), page in pages.items():
        rows = [dict(r) for r in page.rows]
        if not cross_states:
            rows = [r for r in rows if set(r["path_states"]) == {plan["state_name"]}]
        walks[addresses[row_id]] = rows
    return merge(walks)
