"""What a plan reaches: the blast radius (DEPENDENTS) of every instance it updates,
replaces or deletes, as one: each member once, at its shortest depth from any of them,
with one shortest path and every changed instance that reaches it (`via`).

One walk from all the changed instances at once (app.graph.across.reach); which of
them reach a member follows from the hops the walk took (`reached_by`)."""

from collections import deque
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import TypeVar
from uuid import UUID

import asyncpg

from app.graph.across import reach
from app.plans.store import Plan, impact_addresses

K = TypeVar("K", bound=Hashable)


@dataclass(slots=True)  # not frozen: tens of thousands a plan, made at a third of the cost
class Member:
    state: str
    address: str
    depth: int
    path: list[str]
    path_states: list[str]
    via: list[str]  # the changed instances that reach it, by address


def reached_by(roots: list[K], hops: Iterable[tuple[K, K]]) -> dict[K, int]:
    """Which roots reach each node over one hop or more: a bit set (bit i: roots[i]) per
    node reached. Pure. In topological order each node is visited once; nodes on a
    cycle (Terraform has none) are visited again until nothing grows."""
    bits = {root: 1 << i for i, root in enumerate(roots)}
    after: dict[K, list[K]] = {}
    waiting: dict[K, int] = {}  # hops into a node not yet visited
    for source, target in set(hops):
        if source in after:
            after[source].append(target)
        else:
            after[source] = [target]
        waiting[target] = waiting.get(target, 0) + 1
    found: dict[K, int] = {}
    # Kahn's order: a node is visited once all the hops into it are handed on
    ready = [node for node in after if node not in waiting]
    while ready:
        node = ready.pop()
        out = found.get(node, 0) | bits.get(node, 0)
        for target in after.get(node, ()):
            found[target] = found.get(target, 0) | out
            left = waiting[target] - 1
            waiting[target] = left
            if not left:
                ready.append(target)

    def visit(node: K) -> list[K]:
        """Hand the node's roots on; the nodes whose roots grew."""
        out = found.get(node, 0) | bits.get(node, 0)
        grown = []
        for target in after.get(node, ()):
            held = found.get(target, 0)
            if held | out != held:
                found[target] = held | out
                grown.append(target)
        return grown

    again = deque(node for node, count in waiting.items() if count > 0)
    while again:
        again.extend(visit(again.popleft()))
    return found


async def plan_impact(
    conn: asyncpg.Connection,
    plan: Plan,
    *,
    cross_states: bool,
    readable: list[str] | None,
) -> list[Member]:
    """The plan's impact, by depth, state and address: within its state, or with
    `cross_states` on through the states that read its outputs (those `readable` only)."""
    return await impact(
        conn,
        plan["base_version_id"],
        impact_addresses(plan["analysis"]["changes"]),
        cross_states=cross_states,
        readable=readable,
    )


async def impact(
    conn: asyncpg.Connection,
    version_id: UUID | None,
    addresses: list[str],
    *,
    cross_states: bool,
    readable: list[str] | None,
) -> list[Member]:
    """plan_impact of a plan changing the instances at `addresses` (impact_addresses) of
    version `version_id` (None: the state has none)."""
    if version_id is None or not addresses:
        return []
    walked = await reach(conn, version_id, addresses, across=cross_states, readable=readable)
    roots = [row_id for row_id, _ in walked.roots]  # by address: bit i is the i-th
    own = {row_id: 1 << i for i, row_id in enumerate(roots)}
    reaching = reached_by(roots, walked.hops)
    named: dict[int, list[str]] = {}  # the roots of a bit set, by address
    found = []
    for row_id, (depth, states, path) in walked.members.items():
        # a changed instance does not reach itself (only a cycle would say so)
        bits = reaching.get(row_id, 0) & ~own.get(row_id, 0)
        if not bits:
            continue
        via = named.get(bits)
        if via is None:
            via = named[bits] = _named(bits, walked.roots)
        found.append(Member(states[-1], path[-1], depth, path, states, via))
    return sorted(found, key=lambda m: (m.depth, m.state, m.address))


def _named(bits: int, roots: list[tuple[UUID, str]]) -> list[str]:
    """The addresses of the roots in a bit set (bit i: roots[i])."""
    found = []
    while bits:
        lowest = bits & -bits
        found.append(roots[lowest.bit_length() - 1][1])
        bits ^= lowest
    return found
