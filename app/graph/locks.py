"""Whole-state locks (Terraform's LOCK/UNLOCK), and the writes and deletes they guard.

Lock, unlock, write and delete of one state each first lock the state's row
(FOR UPDATE, or the upsert of LOCK, which locks the row it finds), so they
happen one at a time: no LOCK or UNLOCK can slip between a write's lock check
and the write itself. Who gets the lock is decided by INSERT ... ON CONFLICT
DO NOTHING on state_locks (one row per state), as the seed schema designs it.
LOCK and UNLOCK are one statement each (with their audit event): the common
case costs one round trip.

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

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import asyncpg

from app.access import Principal, Role
from app.errors import Forbidden, Locked, NotFound
from app.graph.raw import Body
from app.graph.states import delete_state, ensure_state
from app.graph.write.version import Written, write_version
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
_EVENT_DETAIL = (
    "jsonb_build_object('id', {0} -> 'ID', 'who', {0} -> 'Who', 'operation', {0} -> 'Operation',"
    " 'holder', {1}) || {2}"
)

# LOCK in one statement: make or find the state's row and lock it (an upsert locks the
# row it finds, as FOR UPDATE would), take the lock if free, and record the event.
_LOCK = f"""
    WITH state AS (
        INSERT INTO states (name, kind) VALUES ($1, 'terraform')
        ON CONFLICT (name) DO UPDATE SET name = excluded.name
        RETURNING id
    ), taken AS (
        INSERT INTO state_locks (state_id, lock_id, info, holder)
        SELECT id, $2, $3, $4 FROM state
        ON CONFLICT (state_id) DO NOTHING
        RETURNING state_id
    ), event AS (
        INSERT INTO events (state_id, state_name, action, actor, detail)
        SELECT state_id, $1, 'lock', $4,
               {_EVENT_DETAIL.format("$3::jsonb", "$4::text", "$5::jsonb")}
        FROM taken
    )
    SELECT id AS state_id, EXISTS (SELECT 1 FROM taken) AS taken FROM state"""

# UNLOCK in one statement: lock the state's row, release the lock when `$2` (the lock
# ID; NULL = any: a force-unlock) is the lock's and the caller `$3` holds it (or `$4`: is
# an admin), record the event (a force-unlock unless the holder released it by its ID),
# and return the lock. `$6` is the state's id, looked up before: each statement on
# state_locks names it (one shard on Citus).
_UNLOCK = f"""
    WITH state AS (
        SELECT id FROM states WHERE name = $1 AND id = $6 FOR UPDATE
    ), holder AS (
        SELECT l.state_id, l.lock_id, l.info, l.holder,
               $2::text IS NOT NULL AND (l.holder IS NULL OR l.holder = $3) AS own
        FROM state_locks l JOIN state ON l.state_id = state.id WHERE l.state_id = $6
    ), released AS (
        DELETE FROM state_locks l USING holder h
        WHERE l.state_id = $6 AND l.state_id = h.state_id
          AND ($2::text IS NULL OR h.lock_id = $2) AND (h.own OR $4)
        RETURNING l.state_id
    ), event AS (
        INSERT INTO events (state_id, state_name, action, actor, detail)
        SELECT h.state_id, $1, CASE WHEN h.own THEN 'unlock' ELSE 'force-unlock' END, $3,
               {_EVENT_DETAIL.format("h.info", "h.holder", "$5::jsonb")}
        FROM holder h JOIN released r ON r.state_id = h.state_id
    )
    SELECT h.lock_id, h.info, h.holder, EXISTS (SELECT 1 FROM released) AS released
    FROM holder h"""


def _claims(who: Principal) -> dict[str, Any]:
    """What a lock event adds to its detail: an OIDC caller's verified claims."""
    return {"oidc": dict(who.claims)} if who.claims else {}


async def lock(
    conn: asyncpg.Connection, name: str, info: dict[str, Any], *, who: Principal
) -> bool:
    """Take the lock of state `name` for the LockInfo `info` (its "ID" names the lock),
    held by `who`.

    The state need not exist yet. Returns False when that very lock was already
    held by `who` (a LOCK retried after a lost response); raises Locked with the
    holder's LockInfo when another lock is held, or this one by another token.
    """
    while True:
        row = await conn.fetchrow(_LOCK, name, info["ID"], info, who.name, _claims(who))
        # never None: the upsert of the state's row (DO UPDATE) always returns it
        assert row is not None
        if row["taken"]:
            return True
        # Held: name the holder as of holding the state's row, so it cannot change
        # (a holder seen by the statement above may have unlocked since).
        async with conn.transaction():
            await _hold(conn, name)
            holder = await _holder(conn, row["state_id"])
            if holder is not None and (holder["lock_id"] != info["ID"] or not holds(who, holder)):
                raise _locked(name, holder)
            if holder is not None:
                return False
        # released meanwhile: try to take it again


async def unlock(
    conn: asyncpg.Connection, name: str, lock_id: str | None, *, who: Principal
) -> bool:
    """Release the lock of state `name` for `who`; `lock_id` must be the lock's, or None
    to release whatever lock is held (a force-unlock: the caller checks `who` is an admin).

    Returns False when no lock was held (a retried UNLOCK); raises Locked with
    the holder's LockInfo when another lock is held, Forbidden naming the holder
    when `who` names a lock it does not hold.
    """
    doing = f"UNLOCK state {name!r}"
    state_id = await conn.fetchval("SELECT id FROM states WHERE name = $1", name)
    if state_id is None:
        return False
    holder = await conn.fetchrow(
        _UNLOCK, name, lock_id, who.name, who.has(Role.ADMIN), _claims(who), state_id
    )
    if holder is None:
        return False
    if holder["released"]:
        return True
    if holder["lock_id"] != lock_id:
        raise _locked(name, holder)
    raise not_the_holder(who, name, holder, doing)


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
