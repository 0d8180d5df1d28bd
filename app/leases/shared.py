"""Shared plan locks: a LOCK whose LockInfo Operation is a plan.

A plan reads a version and writes nothing, and a saved plan made from a version that
moves on is refused by Terraform itself as stale: so any number of plans hold a state
at once, beside its writer lock and its leases, and none waits for them or they for
it. Each is its own row (migration 0026), released by its ID by its holder (an admin:
a force-unlock) in UNLOCK's one statement, which looks for a plan's lock of that ID
before the writer's (app/graph/locks.py), and listed with the writer's lock in
`State.locks`.
"""

from typing import Any

import asyncpg

from app.access import Principal
from app.errors import Forbidden, Locked
from app.graph.events import append_event
from app.graph.states import ensure_state

PLAN_OPERATION = "OperationTypePlan"  # a LockInfo's Operation when `terraform plan` locks


def is_plan(info: dict[str, Any] | None) -> bool:
    return info is not None and info.get("Operation") == PLAN_OPERATION


def _detail(info: dict[str, Any], holder: str | None) -> dict[str, Any]:
    return {
        "id": info.get("ID"),
        "who": info.get("Who"),
        "operation": info.get("Operation"),
        "holder": holder,
        "shared": True,
    }


async def take(
    conn: asyncpg.Connection, name: str, info: dict[str, Any], *, who: Principal
) -> bool:
    """Hold state `name` for the plan `info` describes; False when that lock was already
    held (a LOCK retried), by `who`. Another token's lock of that ID: Locked."""
    async with conn.transaction():
        state_id = await ensure_state(conn, name)
        taken = await conn.fetchval(
            """INSERT INTO state_plan_locks (state_id, lock_id, info, holder)
               VALUES ($1, $2, $3, $4) ON CONFLICT (state_id, lock_id) DO NOTHING
               RETURNING true""",
            state_id,
            info["ID"],
            info,
            who.name,
        )
        if taken:
            await append_event(
                conn,
                state_name=name,
                action="lock",
                actor=who.name,
                state_id=state_id,
                detail=_detail(info, who.name),
            )
            return True
        held = await conn.fetchrow(
            "SELECT info, holder FROM state_plan_locks WHERE state_id = $1 AND lock_id = $2",
            state_id,
            info["ID"],
        )
        if held is not None and held["holder"] not in (None, who.name):
            raise Locked(
                f"state {name!r} has a plan's lock of that ID (by token {held['holder']!r})",
                held["info"],
            )
        return False


def not_the_holder(
    who: Principal, name: str, lock_id: str, holder: str | None, doing: str
) -> Forbidden:
    """The refusal of `doing` to the plan lock `lock_id` that `who` does not hold."""
    return who.refusal(
        doing,
        f"the plan lock (ID {lock_id}) is held by token {holder!r}, and only its holder "
        "may release it",
        state=name,
        holder=str(holder),
        lock_id=lock_id,
    )


async def locks_of(
    conn: asyncpg.Connection, state_ids: list[Any]
) -> dict[Any, list[asyncpg.Record]]:
    """Every lock of each state, the writer's first, then the plans' oldest first."""
    records = await conn.fetch(
        """SELECT state_id, lock_id, info, holder, info->>'Who' AS who,
                  info->>'Operation' AS operation, created_at, false AS shared
           FROM state_locks WHERE state_id = ANY($1::uuid[])
           UNION ALL
           SELECT state_id, lock_id, info, holder, info->>'Who', info->>'Operation',
                  created_at, true
           FROM state_plan_locks WHERE state_id = ANY($1::uuid[])
           ORDER BY shared, created_at, lock_id""",
        state_ids,
    )
    found: dict[Any, list[asyncpg.Record]] = {}
    for r in records:
        found.setdefault(r["state_id"], []).append(r)
    return found
