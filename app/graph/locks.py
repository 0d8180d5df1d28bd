"""Whole-state locks (Terraform's LOCK/UNLOCK), and the writes and deletes they guard.

Lock, unlock, write and delete of one state each first lock the state's row
(FOR UPDATE, or the upsert of LOCK, which locks the row it finds), so they
happen one at a time: no LOCK or UNLOCK can slip between a write's lock check
and the write itself. Who gets the lock is decided by INSERT ... ON CONFLICT
DO NOTHING on state_locks (one row per state), as the seed schema designs it.
LOCK and UNLOCK are one statement each (with their audit event): the common
case costs one round trip. UNLOCK releases a plan's shared lock of the ID it
names (app/leases/shared.py) in that statement too, before the writer's; the http
backend's LOCK adds a look at the state's leases (app/leases/store.py, lock_whole).

A lock belongs to the token that took it (`holder`, migration 0020); knowing its ID
grants nothing. Under a lock held by another token:

    UNLOCK with its ID   the holder releases it; an admin too, recorded as force-unlock;
                         anyone else 403 naming the holder
    UNLOCK, empty        (terraform force-unlock) an admin only (app/backend/routes.py)
    POST, DELETE         with its ID: the holder only (an admin force-unlocks first),
                         anyone else 403 naming the holder; without it (or another
                         ID): 409 with the holder's LockInfo
    LOCK                 409 with the holder's LockInfo, its ID or not

A lock taken before holders were kept (holder NULL) is released and written under by
its ID, as then.
"""

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from app.access import Principal, Role
from app.errors import Forbidden, Locked, NotFound
from app.graph.raw import Body
from app.graph.shards import pinned, sharded
from app.graph.states import delete_state, ensure_state
from app.graph.write.version import Written, write_version
from app.leases import shared
from app.tfstate import EncryptedState, ScannedState
from app.tfstate.remote import Server


async def _hold(conn: asyncpg.Connection, name: str) -> UUID | None:
    """Lock the state's row until the transaction ends; None when there is no state."""
    state_id: UUID | None = await conn.fetchval(
        "SELECT id FROM states WHERE name = $1 FOR UPDATE", name
    )
    return state_id


async def _hold_or_create(conn: asyncpg.Connection, name: str) -> UUID:
    """`_hold`, making the row first when missing: a first LOCK creates it, and a
    write that waited on a LOCK creating it then sees that lock."""
    while True:
        await ensure_state(conn, name)
        if (state_id := await _hold(conn, name)) is not None:
            return state_id
        # deleted between the two statements: make it again


async def _holder(conn: asyncpg.Connection, state_id: UUID) -> asyncpg.Record | None:
    return await conn.fetchrow(
        "SELECT lock_id, info, holder FROM state_locks WHERE state_id = $1", state_id
    )


def holds(who: Principal, holder: asyncpg.Record) -> bool:
    """Whether `who` took the lock (one taken before holders were kept: whoever names it)."""
    return holder["holder"] is None or holder["holder"] == who.name


def not_the_holder(who: Principal, name: str, holder: asyncpg.Record, doing: str) -> Forbidden:
    """The refusal of `doing` under a lock `who` does not hold: it names the holder."""
    info = holder["info"]
    hint = "; an admin may force-unlock it" if not who.has(Role.ADMIN) else ""
    return who.refusal(
        doing,
        f"the lock (ID {holder['lock_id']}) is held by token {holder['holder']!r}, and only "
        f"its holder may release it or write under it{hint}",
        state=name,
        holder=holder["holder"],
        lock_id=holder["lock_id"],
        lock_who=str(info.get("Who") or ""),
        lock_operation=str(info.get("Operation") or ""),
    )


def _locked(name: str, holder: asyncpg.Record) -> Locked:
    info = holder["info"]
    who = info.get("Who")
    return Locked(
        f"state {name!r} is locked (ID {holder['lock_id']}" + (f", by {who})" if who else ")"),
        info,
    )


async def _refuse_other_holder(
    conn: asyncpg.Connection,
    state_id: UUID,
    name: str,
    lock_id: str | None,
    who: Principal,
    doing: str,
) -> None:
    holder = await _holder(conn, state_id)
    if holder is None:
        return
    if holder["lock_id"] != lock_id:
        raise _locked(name, holder)
    if not holds(who, holder):
        raise not_the_holder(who, name, holder, doing)


# The detail of a lock's events, from its LockInfo (jsonb) and its holder
EVENT_DETAIL = (
    "jsonb_build_object('id', {0} -> 'ID', 'who', {0} -> 'Who', 'operation', {0} -> 'Operation',"
    " 'holder', {1}) || {2}"
)


@functools.cache
def lock_sql(unless: str = "false") -> str:
    """LOCK in one statement: make or find the state's row and lock it (an upsert locks
    the row it finds, as FOR UPDATE would), take the lock if free and `unless` (SQL of
    the state's row `state`: what else keeps it, app/leases/store.py) is false, and
    record the event."""
    return f"""
    WITH state AS (
        INSERT INTO states (name, kind) VALUES ($1, 'terraform')
        ON CONFLICT (name) DO UPDATE SET name = excluded.name
        RETURNING id
    ), kept AS (
        SELECT {unless} AS kept FROM state
    ), taken AS (
        INSERT INTO state_locks (state_id, lock_id, info, holder)
        SELECT id, $2, $3, $4 FROM state, kept WHERE NOT kept.kept
        ON CONFLICT (state_id) DO NOTHING
        RETURNING state_id
    ), event AS (
        INSERT INTO events (state_id, state_name, action, actor, detail)
        SELECT state_id, $1, 'lock', $4,
               {EVENT_DETAIL.format("$3::jsonb", "$4::text", "$5::jsonb")}
        FROM taken
    )
    SELECT id AS state_id, EXISTS (SELECT 1 FROM taken) AS taken, kept.kept
    FROM state, kept"""


_SHARED = "jsonb_build_object('shared', true) || $5::jsonb"  # a plan lock's event detail


def _unlock_sql(pinned_state: bool) -> str:
    """UNLOCK in one statement: release the plan's shared lock `$2` (the lock ID) when
    there is one (not holding the state's row, as a plan's LOCK does not), else hold the
    state's row and release the writer's lock when `$2` (NULL = any: a force-unlock)
    is the lock's; either only when the caller `$3` holds it (or `$4`: is an admin);
    record the event (a force-unlock unless the holder released it), and return the lock
    found. With `pinned_state` (on Citus), `$6` is the state's id, looked up before:
    each statement on a lock table names it (one shard)."""
    if pinned_state:
        plan_of_state, state_is = "p.state_id = $6", "name = $1 AND id = $6"
    else:
        plan_of_state = "p.state_id = (SELECT id FROM states WHERE name = $1)"
        state_is = "name = $1"

    def pin(table: str) -> str:
        return f"{table}.state_id = $6 AND " if pinned_state else ""

    return f"""
    WITH plan AS (
        SELECT p.state_id, p.lock_id, p.info, p.holder, p.holder IS NULL OR p.holder = $3 AS own
        FROM state_plan_locks p WHERE {plan_of_state} AND p.lock_id = $2
    ), plan_released AS (
        DELETE FROM state_plan_locks p USING plan x
        WHERE {pin("p")}p.state_id = x.state_id AND p.lock_id = x.lock_id AND (x.own OR $4)
        RETURNING p.state_id
    ), state AS (
        -- locks the row only when it is returned: not for a plan's lock
        SELECT id FROM states WHERE {state_is} AND NOT EXISTS (SELECT 1 FROM plan) FOR UPDATE
    ), holder AS (
        SELECT l.state_id, l.lock_id, l.info, l.holder,
               $2::text IS NOT NULL AND (l.holder IS NULL OR l.holder = $3) AS own
        FROM state_locks l JOIN state ON l.state_id = {"$6" if pinned_state else "state.id"}
    ), released AS (
        DELETE FROM state_locks l USING holder h
        WHERE {pin("l")}l.state_id = h.state_id
          AND ($2::text IS NULL OR h.lock_id = $2) AND (h.own OR $4)
        RETURNING l.state_id
    ), event AS (
        INSERT INTO events (state_id, state_name, action, actor, detail)
        SELECT h.state_id, $1, CASE WHEN h.own THEN 'unlock' ELSE 'force-unlock' END, $3,
               {EVENT_DETAIL.format("h.info", "h.holder", "$5::jsonb")}
        FROM holder h JOIN released r ON r.state_id = h.state_id
        UNION ALL
        SELECT x.state_id, $1, CASE WHEN x.own THEN 'unlock' ELSE 'force-unlock' END, $3,
               {EVENT_DETAIL.format("x.info", "x.holder", _SHARED)}
        FROM plan x JOIN plan_released r ON r.state_id = x.state_id
    )
    SELECT false AS shared, h.lock_id, h.info, h.holder, h.own,
           EXISTS (SELECT 1 FROM released) AS released
    FROM holder h
    UNION ALL
    SELECT true, x.lock_id, x.info, x.holder, x.own, EXISTS (SELECT 1 FROM plan_released)
    FROM plan x"""


_UNLOCK = {pinned_state: _unlock_sql(pinned_state) for pinned_state in (False, True)}


def claims(who: Principal) -> dict[str, Any]:
    """What a lock event adds to its detail: an OIDC caller's verified claims."""
    return {"oidc": dict(who.claims)} if who.claims else {}


@dataclass(frozen=True)
class Taken:
    """What a LOCK did: the state's id, and whether the lock was taken (True), was held
    by the caller already (False, a LOCK retried), or kept by `unless` (None)."""

    state_id: UUID
    taken: bool | None


async def take(
    conn: asyncpg.Connection,
    name: str,
    info: dict[str, Any],
    *,
    who: Principal,
    unless: str = "false",
    args: Sequence[Any] = (),
) -> Taken:
    """`lock`, not taken while the SQL condition `unless` (lock_sql's; its parameters
    from $6: `args`) holds."""
    statement = lock_sql(unless)
    while True:
        row = await conn.fetchrow(statement, name, info["ID"], info, who.name, claims(who), *args)
        # never None: the upsert of the state's row (DO UPDATE) always returns it
        assert row is not None
        if row["taken"]:
            return Taken(row["state_id"], True)
        if row["kept"]:
            return Taken(row["state_id"], None)
        # Held: name the holder as of holding the state's row, so it cannot change
        # (a holder seen by the statement above may have unlocked since).
        async with conn.transaction():
            await _hold(conn, name)
            holder = await _holder(conn, row["state_id"])
            if holder is not None and (holder["lock_id"] != info["ID"] or not holds(who, holder)):
                raise _locked(name, holder)
            if holder is not None:
                return Taken(row["state_id"], False)
        # released meanwhile: try to take it again


async def lock(
    conn: asyncpg.Connection, name: str, info: dict[str, Any], *, who: Principal
) -> bool:
    """Take the lock of state `name` for the LockInfo `info` (its "ID" names the lock),
    held by `who`.

    The state need not exist yet. Returns False when that very lock was already
    held by `who` (a LOCK retried after a lost response); raises Locked with the
    holder's LockInfo when another lock is held, or this one by another token.
    """
    return bool((await take(conn, name, info, who=who)).taken)


async def withdraw(
    conn: asyncpg.Connection,
    taken: Taken,
    name: str,
    info: dict[str, Any],
    *,
    who: Principal,
    why: dict[str, Any],
) -> None:
    """Release the lock `take` took, holding the state's row as every change of a lock
    does, when another holder turns out to have come first (`why`, recorded on the
    unlock event)."""
    await conn.execute(
        f"""WITH state AS (
                SELECT id FROM states WHERE id = $1 FOR UPDATE
            ), gone AS (
                DELETE FROM state_locks l USING state
                WHERE l.state_id = $1 AND l.state_id = state.id AND l.lock_id = $2
                  AND l.holder = $3
                RETURNING l.state_id, l.info, l.holder)
            INSERT INTO events (state_id, state_name, action, actor, detail)
            SELECT state_id, $4, 'unlock', $3,
                   {EVENT_DETAIL.format("info", "holder", "$5::jsonb")}
            FROM gone""",
        taken.state_id,
        info["ID"],
        who.name,
        name,
        {"withdrawn": why, **claims(who)},
    )


async def unlock(
    conn: asyncpg.Connection, name: str, lock_id: str | None, *, who: Principal
) -> bool:
    """Release the lock `lock_id` of state `name` for `who`: a plan's shared lock of that
    ID, else the writer's lock; `lock_id` None releases the writer's lock whatever it is
    (a force-unlock: the caller checks `who` is an admin).

    Returns False when no lock was held (a retried UNLOCK); raises Locked with
    the holder's LockInfo when another lock is held, Forbidden naming the holder
    when `who` names a lock it does not hold.
    """
    doing = f"UNLOCK state {name!r}"
    state_id = None
    if sharded(conn):
        state_id = await conn.fetchval("SELECT id FROM states WHERE name = $1", name)
        if state_id is None:
            return False
    found = await conn.fetchrow(
        _UNLOCK[state_id is not None],
        name,
        lock_id,
        who.name,
        who.has(Role.ADMIN),
        claims(who),
        *pinned(state_id),
    )
    if found is None:
        return False
    if found["released"]:
        return True
    if found["shared"]:
        if found["own"] or who.has(Role.ADMIN):
            return True  # released meanwhile by another UNLOCK of it
        raise shared.not_the_holder(who, name, found["lock_id"], found["holder"], doing)
    if found["lock_id"] != lock_id:
        raise _locked(name, found)
    raise not_the_holder(who, name, found, doing)


async def guarded_write(
    conn: asyncpg.Connection,
    name: str,
    body: Body,
    lock_id: str | None,
    *,
    state: ScannedState | EncryptedState,
    who: Principal,
    keep_last: int | None = None,
    servers: Sequence[Server] = (),
) -> Written:
    """Store `body` as the next version of `name` (write_version's rules), refused
    with Locked while a lock is held under another ID than `lock_id`, and Forbidden
    under a lock `who` does not hold. With no lock held the write goes through
    (`terraform apply -lock=false`)."""
    async with conn.transaction():
        state_id = await _hold_or_create(conn, name)
        await _refuse_other_holder(conn, state_id, name, lock_id, who, f"POST state {name!r}")
        return await write_version(
            conn,
            name,
            body,
            actor=who.name,
            state=state,
            detail={"lock": lock_id} if lock_id else None,
            keep_last=keep_last,
            servers=servers,
        )


async def guarded_delete(
    conn: asyncpg.Connection, name: str, lock_id: str | None, *, who: Principal
) -> int:
    """Delete state `name` and its history (its lock goes with it), refused as a write
    under a lock is. Returns how many versions went."""
    async with conn.transaction():
        state_id = await _hold(conn, name)
        if state_id is None:
            raise NotFound(f"no state {name!r}")
        await _refuse_other_holder(conn, state_id, name, lock_id, who, f"DELETE state {name!r}")
        return await delete_state(conn, state_id, name, actor=who.name)
