"""Leases and their SQL: acquired from a plan, listed, released, expired.

A lease is taken, and every other change of a state's locks is made, while holding
the state's row (FOR UPDATE, or the upsert of a LOCK, which locks the row it finds): a
whole-state writer LOCK, which looks at the live leases again once its lock is taken
(lock_whole), and a lease exclude each other without a race. Footprints are rows of
lease_footprints, whose exclusion constraint (migration 0026) keeps two live leases of
a state off the same address even if a check here were wrong; the check comes first so
that the refusal names the other lease. A lease past its `expires_at` is dead: it is
deleted (recorded `lease-expired`) by the next request on its state that looks at leases.
"""

import uuid
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from app.access import Principal, Role
from app.errors import BadInput, Forbidden, LeaseConflict, Locked, NotFound, StalePlan
from app.graph import locks
from app.graph.events import append_event
from app.graph.queries import valid_at
from app.graph.shards import pinned, sharded
from app.leases.footprint import Footprint, footprint
from app.plans.parse import ParsedPlan
from app.plans.store import is_stale

MAX_TTL_SECONDS = 7 * 24 * 3600

ACQUIRED = "lease-acquired"
MERGED = "lease-merged"
RELEASED = "lease-released"
EXPIRED = "lease-expired"
CONFLICT = "lease-conflict"
ACTIONS = (ACQUIRED, MERGED, RELEASED, EXPIRED, CONFLICT)

LEASE_COLUMNS = """l.id, l.state_id, s.name AS state_name, l.holder, l.base_serial,
    l.addresses, l.outputs, l.ttl_seconds, l.expires_at, l.lock_id, l.lock_info,
    l.writes, l.created_at"""


@dataclass(frozen=True)
class Lease:
    id: UUID
    state_id: UUID
    state_name: str
    holder: str
    base_serial: int
    addresses: list[str]
    outputs: list[str]
    ttl_seconds: int
    expires_at: datetime
    lock_id: str | None
    lock_info: dict[str, Any] | None
    writes: int
    created_at: datetime

    @classmethod
    def of(cls, record: asyncpg.Record) -> "Lease":
        return cls(**{k: record[k] for k in cls.__dataclass_fields__})


async def hold_state(conn: asyncpg.Connection, name: str) -> UUID:
    """Lock the state's row until the transaction ends; NotFound when there is none."""
    state_id: UUID | None = await conn.fetchval(
        "SELECT id FROM states WHERE name = $1 FOR UPDATE", name
    )
    if state_id is None:
        raise NotFound(f"no state {name!r}")
    return state_id


async def reap(conn: asyncpg.Connection, state_id: UUID, name: str) -> list[UUID]:
    """Delete the state's leases past their time, each recorded `lease-expired`."""
    records = await conn.fetch(
        """DELETE FROM leases WHERE state_id = $1 AND expires_at <= now()
           RETURNING id, holder, lock_id, writes, addresses, outputs""",
        state_id,
    )
    for r in records:
        await append_event(
            conn,
            state_name=name,
            action=EXPIRED,
            actor=r["holder"],
            state_id=state_id,
            detail={"lease": str(r["id"]), "holder": r["holder"], "writes": r["writes"]},
        )
    return [r["id"] for r in records]


async def live_leases(conn: asyncpg.Connection, state_id: UUID) -> list[Lease]:
    records = await conn.fetch(
        f"""SELECT {LEASE_COLUMNS} FROM leases l JOIN states s ON s.id = l.state_id
            WHERE l.state_id = $1 AND l.expires_at > now() ORDER BY l.created_at, l.id""",
        state_id,
    )
    return [Lease.of(r) for r in records]


async def leases_of(conn: asyncpg.Connection, state_ids: list[UUID]) -> dict[UUID, list[Lease]]:
    """The live leases of each state, oldest first (a dataloader's batch)."""
    records = await conn.fetch(
        f"""SELECT {LEASE_COLUMNS} FROM leases l JOIN states s ON s.id = l.state_id
            WHERE l.state_id = ANY($1::uuid[]) AND l.expires_at > now()
            ORDER BY l.created_at, l.id""",
        state_ids,
    )
    found: dict[UUID, list[Lease]] = {}
    for r in records:
        found.setdefault(r["state_id"], []).append(Lease.of(r))
    return found


def lease_names(leases: list[Lease]) -> list[dict[str, Any]]:
    """What a refusal says of the live leases in the way."""
    return [
        {"lease": str(lease.id), "holder": lease.holder, "addresses": lease.addresses}
        for lease in leases
    ]


async def _head(conn: asyncpg.Connection, state_id: UUID, name: str) -> tuple[UUID, int]:
    """The current version's id and serial."""
    record = await conn.fetchrow(
        """SELECT id, serial FROM state_versions WHERE state_id = $1
           ORDER BY serial DESC LIMIT 1""",
        state_id,
    )
    if record is None:
        raise NotFound(
            f"state {name!r} has no version yet: its first apply takes the whole-state lock"
        )
    return record["id"], record["serial"]


# The managed instances' ids of a few versions (address -> id), by version id: what a
# plan's prior state is compared with. A version never changes, and the leases of one
# plan round are all taken on one version: its rows are read once for them all.
_IDS_KEPT = 8
_ids: OrderedDict[UUID, dict[str, Any]] = OrderedDict()


async def _instance_ids(
    conn: asyncpg.Connection, state_id: UUID, version_id: UUID, serial: int
) -> dict[str, Any]:
    found = _ids.get(version_id)
    if found is not None:
        _ids.move_to_end(version_id)
        return found
    records = await conn.fetch(
        f"""SELECT r.address, r.attributes->>'id' AS id FROM resources r
            WHERE {valid_at("r")} AND r.mode = 'managed'""",
        state_id,
        serial,
    )
    found = {r["address"]: r["id"] for r in records}
    _ids[version_id] = found
    while len(_ids) > _IDS_KEPT:
        _ids.popitem(last=False)
    return found


async def _refuse_stale(
    conn: asyncpg.Connection,
    state_id: UUID,
    name: str,
    plan: ParsedPlan,
    head: tuple[UUID, int],
    serial: int | None,
) -> None:
    """StalePlan when the plan was not made from the current version: the serial it
    names, else (as plans are read, app/plans/store.py) other instances or ids."""
    version_id, current = head
    if serial is not None and serial != current:
        raise StalePlan(
            f"the plan was made from serial {serial} of state {name!r}, which is at "
            f"{current}: plan again",
            {"state": name, "plan_serial": serial, "serial": current},
        )
    if is_stale(plan.prior, await _instance_ids(conn, state_id, version_id, current)):
        raise StalePlan(
            f"the plan's prior state is not the current version (serial {current}) of state "
            f"{name!r}: plan again",
            {"state": name, "serial": current},
        )


async def _overlaps(
    conn: asyncpg.Connection, state_id: UUID, keys: list[str]
) -> list[asyncpg.Record]:
    return await conn.fetch(
        """SELECT l.id, l.holder, array_agg(f.address ORDER BY f.address) AS addresses
           FROM lease_footprints f JOIN leases l ON l.id = f.lease_id AND l.state_id = $1
           WHERE f.state_id = $1 AND f.address = ANY($2::text[])
           GROUP BY l.id, l.holder ORDER BY l.id""",
        state_id,
        keys,
    )


async def acquire(
    conn: asyncpg.Connection,
    name: str,
    plan: ParsedPlan,
    *,
    who: Principal,
    ttl_seconds: int = 3600,
    serial: int | None = None,
) -> Lease:
    """A lease on `plan`'s footprint of state `name`, for `who`.

    LeaseConflict (recorded `lease-conflict`) while a whole-state writer lock is held
    or a live lease holds part of the footprint; StalePlan when the plan was not made
    from the current version."""
    if not 0 < ttl_seconds <= MAX_TTL_SECONDS:
        raise BadInput(f"ttlSeconds must be between 1 and {MAX_TTL_SECONDS}")
    print_ = footprint(plan)
    async with conn.transaction():
        state_id = await hold_state(conn, name)
        await reap(conn, state_id, name)
        refusal = await _refusal(conn, state_id, name, print_)
        if refusal is None:
            head = await _head(conn, state_id, name)
            await _refuse_stale(conn, state_id, name, plan, head, serial)
            return await _insert(conn, state_id, name, print_, who, ttl_seconds, head[1])
    await append_event(
        conn,
        state_name=name,
        action=CONFLICT,
        actor=who.name,
        state_id=state_id,
        detail={"at": "acquire", **refusal.detail},
    )
    raise refusal


async def _refusal(
    conn: asyncpg.Connection, state_id: UUID, name: str, print_: Footprint
) -> LeaseConflict | None:
    writer = await conn.fetchrow(
        "SELECT lock_id, info, holder FROM state_locks WHERE state_id = $1", state_id
    )
    if writer is not None:
        return LeaseConflict(
            f"state {name!r} is locked whole (ID {writer['lock_id']}, by token "
            f"{writer['holder']!r}): a lease waits for that lock's release",
            {"state": name, "lock": writer["info"], "holder": writer["holder"]},
        )
    overlaps = await _overlaps(conn, state_id, print_.keys())
    if not overlaps:
        return None
    named = "; ".join(
        f"lease {o['id']} of {o['holder']!r}: {', '.join(o['addresses'])}" for o in overlaps
    )
    return LeaseConflict(
        f"the plan's footprint on state {name!r} overlaps live leases ({named})",
        {
            "state": name,
            "addresses": sorted({a for o in overlaps for a in o["addresses"]}),
            "leases": [
                {"lease": str(o["id"]), "holder": o["holder"], "addresses": list(o["addresses"])}
                for o in overlaps
            ],
        },
    )


async def _insert(
    conn: asyncpg.Connection,
    state_id: UUID,
    name: str,
    print_: Footprint,
    who: Principal,
    ttl_seconds: int,
    head: int,
) -> Lease:
    lease_id = uuid.uuid4()
    record = await conn.fetchrow(
        f"""WITH made AS (
                INSERT INTO leases (id, state_id, holder, base_serial, addresses, outputs,
                                    ttl_seconds, expires_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7::integer,
                        now() + $7::integer * interval '1 second')
                RETURNING *
            ), footprint AS (
                INSERT INTO lease_footprints (lease_id, state_id, address)
                SELECT $1, $2, unnest($8::text[])
            )
            SELECT {LEASE_COLUMNS} FROM made l JOIN states s ON s.id = l.state_id""",
        lease_id,
        state_id,
        who.name,
        head,
        list(print_.addresses),
        list(print_.outputs),
        ttl_seconds,
        print_.keys(),
    )
    assert record is not None  # the insert returns its row
    await append_event(
        conn,
        state_name=name,
        action=ACQUIRED,
        actor=who.name,
        state_id=state_id,
        serial=head,
        detail={
            "lease": str(lease_id),
            "holder": who.name,
            "addresses": list(print_.addresses),
            "outputs": list(print_.outputs),
            "ttl_seconds": ttl_seconds,
        },
    )
    return Lease.of(record)


async def release(
    conn: asyncpg.Connection, lease_id: UUID, *, who: Principal, how: str = "release"
) -> Lease:
    """End lease `lease_id`: its holder's, or an admin's (recorded as forced). NotFound
    when there is no such live lease (or it is of a state `who` does not read)."""
    # its state first: the row is then locked on the state's shard alone
    state_id = await conn.fetchval("SELECT state_id FROM leases WHERE id = $1", lease_id)
    async with conn.transaction():
        found = await conn.fetchrow(
            f"""SELECT {LEASE_COLUMNS} FROM leases l JOIN states s ON s.id = l.state_id
                WHERE l.id = $1 AND l.state_id = $2 FOR UPDATE OF l""",
            lease_id,
            state_id,
        )
        if found is None or not who.may_read(found["state_name"]):
            raise NotFound(f"no lease {lease_id}")
        lease = Lease.of(found)
        own = lease.holder == who.name
        if not own and not who.has(Role.ADMIN):
            raise not_the_holder(who, lease, "release")
        await conn.execute("DELETE FROM leases WHERE id = $1 AND state_id = $2", lease_id, state_id)
        await append_event(
            conn,
            state_name=lease.state_name,
            action=RELEASED,
            actor=who.name,
            state_id=lease.state_id,
            detail={
                "lease": str(lease_id),
                "holder": lease.holder,
                "how": how if own else "force-release",
                "writes": lease.writes,
                "expired": lease.expires_at <= await conn.fetchval("SELECT now()"),
            },
        )
    return lease


def not_the_holder(who: Principal, lease: Lease, doing: str) -> Forbidden:
    hint = "; an admin may force-release it" if not who.has(Role.ADMIN) else ""
    return who.refusal(
        f"{doing} lease {lease.id}",
        f"the lease is held by token {lease.holder!r}, and only its holder may use or "
        f"release it{hint}",
        state=lease.state_name,
        holder=lease.holder,
        lease=str(lease.id),
    )


def _leased(name: str, live: list[Lease]) -> Locked:
    """A whole-state LOCK's refusal while live leases hold part of the state, with a
    LockInfo naming them (what Terraform prints of a 409)."""
    first = live[0]
    named = ", ".join(f"{lease.id} ({lease.holder})" for lease in live)
    return Locked(
        f"state {name!r} has {len(live)} live lease(s): {named}",
        {
            "ID": str(first.id),
            "Operation": "lease",
            "Who": first.holder,
            "Info": f"leased to {named}",
            "Created": first.created_at.isoformat(),
            "Leases": lease_names(live),
        },
    )


async def refuse_live_leases(conn: asyncpg.Connection, name: str) -> None:
    """Before a whole-state writer LOCK, in its transaction: hold the state's row (when
    there is one), reap its expired leases and refuse while live leases hold part of it."""
    state_id: UUID | None = await conn.fetchval(
        "SELECT id FROM states WHERE name = $1 FOR UPDATE", name
    )
    if state_id is None:
        return
    await reap(conn, state_id, name)
    if live := await live_leases(conn, state_id):
        raise _leased(name, live)


# What keeps lock_whole's first statement from taking the lock: any lease of the state
# (the row `state` of app/graph/locks.py's lock_sql; on Citus, the id `$6` looked up
# before: its shard), live or expired (then reaped, by the way that holds the row first).
_ANY_LEASE = {
    False: "EXISTS (SELECT 1 FROM leases l WHERE l.state_id = state.id)",
    True: "EXISTS (SELECT 1 FROM leases l WHERE l.state_id = $6)",
}


async def lock_whole(
    conn: asyncpg.Connection, name: str, info: dict[str, Any], *, who: Principal
) -> None:
    """The whole-state writer LOCK of state `name` (app/graph/locks.py's `lock`), refused
    with Locked naming the live leases while any holds part of the state.

    On a state without leases, two statements: one takes the lock unless the state has
    a lease, the next looks at the live leases. That second look is what excludes a
    lease acquired meanwhile: a statement sees what was committed before it began, and
    a LOCK that waited for the state's row while an acquire held it began before that
    lease was committed (no statement of the first can see it). A lease found then came
    first: the lock is withdrawn (an unlock event saying why) and the LOCK refused.
    On Citus the state's id is looked up first, for the first statement to name the
    leases' shard (Citus runs no subquery on them by the row the upsert returns); as the
    second look is what excludes, an id gone stale meanwhile risks nothing. With leases
    (live, or expired and to be reaped), or no state yet on Citus: in a transaction
    holding the state's row, the leases checked, then the lock taken.
    """
    state_id = None
    if sharded(conn):
        state_id = await conn.fetchval("SELECT id FROM states WHERE name = $1", name)
    if state_id is not None or not sharded(conn):
        unless = _ANY_LEASE[state_id is not None]
        taken = await locks.take(conn, name, info, who=who, unless=unless, args=pinned(state_id))
        if taken.taken is not None:
            if taken.taken and (live := await live_leases(conn, taken.state_id)):
                why = {"leases": [str(lease.id) for lease in live]}
                await locks.withdraw(conn, taken, name, info, who=who, why=why)
                raise _leased(name, live)
            return
    async with conn.transaction():  # no lease gets in between
        await refuse_live_leases(conn, name)
        await locks.lock(conn, name, info, who=who)


@dataclass(frozen=True)
class Holders:
    """Everything holding a state: its writer's lock, the plans' and the live leases."""

    lock: dict[str, Any] | None
    plan_locks: list[dict[str, Any]]
    leases: list[Lease]


def _when(value: str) -> datetime:
    return datetime.fromisoformat(value)


async def holders(conn: asyncpg.Connection, state_id: UUID, name: str) -> Holders:
    """One statement (the dashboard's state page counts them)."""
    record = await conn.fetchrow(
        """SELECT
             (SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY x.shared, x.created_at), '[]')
              FROM (SELECT lock_id, info, holder, info->>'Who' AS who,
                           info->>'Operation' AS operation, created_at, false AS shared
                    FROM state_locks WHERE state_id = $1
                    UNION ALL
                    SELECT lock_id, info, holder, info->>'Who', info->>'Operation',
                           created_at, true
                    FROM state_plan_locks WHERE state_id = $1) x) AS locks,
             (SELECT coalesce(jsonb_agg(to_jsonb(l) ORDER BY l.created_at, l.id), '[]')
              FROM leases l WHERE l.state_id = $1 AND l.expires_at > now()) AS leases""",
        state_id,
    )
    assert record is not None  # scalar subqueries: always a row
    locks = [{**x, "created_at": _when(x["created_at"])} for x in record["locks"]]
    leases = [
        Lease(
            id=UUID(x["id"]),
            state_id=state_id,
            state_name=name,
            holder=x["holder"],
            base_serial=x["base_serial"],
            addresses=x["addresses"],
            outputs=x["outputs"],
            ttl_seconds=x["ttl_seconds"],
            expires_at=_when(x["expires_at"]),
            lock_id=x["lock_id"],
            lock_info=x["lock_info"],
            writes=x["writes"],
            created_at=_when(x["created_at"]),
        )
        for x in record["leases"]
    ]
    writer = next((x for x in locks if not x["shared"]), None)
    return Holders(writer, [x for x in locks if x["shared"]], leases)
