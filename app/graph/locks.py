"""Whole-state locks (Terraform's LOCK/UNLOCK), and the writes and deletes they guard.

Lock, unlock, write and delete of one state each first lock the state's row
(FOR UPDATE, or the upsert of LOCK, which locks the row it finds), so they
happen one at a time: no LOCK or UNLOCK can slip between a write's lock check
and the write itself. Who gets the lock is decided by INSERT ... ON CONFLICT
DO NOTHING on state_locks (one row per state), as the seed schema designs it.
LOCK and UNLOCK are one statement each (with their audit event): the common
case costs one round trip.
"""

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import asyncpg

from app.errors import Locked, NotFound
from app.graph.raw import Body
from app.graph.store import Written, delete_state, ensure_state, write_version
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
        "SELECT lock_id, info FROM state_locks WHERE state_id = $1", state_id
    )


def _locked(name: str, holder: asyncpg.Record) -> Locked:
    info = holder["info"]
    who = info.get("Who")
    return Locked(
        f"state {name!r} is locked (ID {holder['lock_id']}" + (f", by {who})" if who else ")"),
        info,
    )


async def _refuse_other_holder(
    conn: asyncpg.Connection, state_id: UUID, name: str, lock_id: str | None
) -> None:
    holder = await _holder(conn, state_id)
    if holder is not None and holder["lock_id"] != lock_id:
        raise _locked(name, holder)


# The detail of a lock's events, from its LockInfo (jsonb)
_EVENT_DETAIL = (
    "jsonb_build_object('id', {0} -> 'ID', 'who', {0} -> 'Who', 'operation', {0} -> 'Operation')"
)

# LOCK in one statement: make or find the state's row and lock it (an upsert locks the
# row it finds, as FOR UPDATE would), take the lock if free, and record the event.
_LOCK = f"""
    WITH state AS (
        INSERT INTO states (name, kind) VALUES ($1, 'terraform')
        ON CONFLICT (name) DO UPDATE SET name = excluded.name
        RETURNING id
    ), taken AS (
        INSERT INTO state_locks (state_id, lock_id, info) SELECT id, $2, $3 FROM state
        ON CONFLICT (state_id) DO NOTHING
        RETURNING state_id
    ), event AS (
        INSERT INTO events (state_id, state_name, action, actor, detail)
        SELECT state_id, $1, 'lock', $4, {_EVENT_DETAIL.format("$3::jsonb")} FROM taken
    )
    SELECT id AS state_id, EXISTS (SELECT 1 FROM taken) AS taken FROM state"""

# UNLOCK in one statement: lock the state's row, release the lock when `$2` (the lock
# ID; NULL = any) is the holder's, record the event, and return the holder.
_UNLOCK = f"""
    WITH state AS (
        SELECT id FROM states WHERE name = $1 FOR UPDATE
    ), holder AS (
        SELECT l.state_id, l.lock_id, l.info FROM state_locks l JOIN state ON l.state_id = state.id
    ), released AS (
        DELETE FROM state_locks l USING holder h
        WHERE l.state_id = h.state_id AND ($2::text IS NULL OR h.lock_id = $2)
        RETURNING l.state_id
    ), event AS (
        INSERT INTO events (state_id, state_name, action, actor, detail)
        SELECT h.state_id, $1, $3, $4, {_EVENT_DETAIL.format("h.info")}
        FROM holder h JOIN released r ON r.state_id = h.state_id
    )
    SELECT h.lock_id, h.info, EXISTS (SELECT 1 FROM released) AS released FROM holder h"""


async def lock(conn: asyncpg.Connection, name: str, info: dict[str, Any], *, actor: str) -> bool:
    """Take the lock of state `name` for the LockInfo `info` (its "ID" names the lock).

    The state need not exist yet. Returns False when that very lock was already
    held (a LOCK retried after a lost response); raises Locked with the holder's
    LockInfo when another lock is held.
    """
    while True:
        row = await conn.fetchrow(_LOCK, name, info["ID"], info, actor)
        # never None: the upsert of the state's row (DO UPDATE) always returns it
        assert row is not None
        if row["taken"]:
            return True
        # Held: name the holder as of holding the state's row, so it cannot change
        # (a holder seen by the statement above may have unlocked since).
        async with conn.transaction():
            await _hold(conn, name)
            holder = await _holder(conn, row["state_id"])
            if holder is not None and holder["lock_id"] != info["ID"]:
                raise _locked(name, holder)
            if holder is not None:
                return False
        # released meanwhile: try to take it again


async def unlock(
    conn: asyncpg.Connection, name: str, lock_id: str | None, *, force: bool, actor: str
) -> bool:
    """Release the lock of state `name`; `lock_id` must be the holder's, or None to
    release whatever lock is held. `force` records it as a force-unlock.

    Returns False when no lock was held (a retried UNLOCK); raises Locked with
    the holder's LockInfo when another lock is held.
    """
    action = "force-unlock" if force else "unlock"
    holder = await conn.fetchrow(_UNLOCK, name, lock_id, action, actor)
    if holder is None:
        return False
    if not holder["released"]:
        raise _locked(name, holder)
    return True


async def guarded_write(
    conn: asyncpg.Connection,
    name: str,
    body: Body,
    lock_id: str | None,
    *,
    state: ScannedState | EncryptedState,
    actor: str,
    keep_last: int | None = None,
    servers: Sequence[Server] = (),
) -> Written:
    """Store `body` as the next version of `name` (store.write_version's rules), refused
    with Locked while a lock is held under another ID than `lock_id`. With no lock
    held the write goes through (`terraform apply -lock=false`)."""
    async with conn.transaction():
        state_id = await _hold_or_create(conn, name)
        await _refuse_other_holder(conn, state_id, name, lock_id)
        return await write_version(
            conn,
            name,
            body,
            actor=actor,
            state=state,
            detail={"lock": lock_id} if lock_id else None,
            keep_last=keep_last,
            servers=servers,
        )


async def guarded_delete(
    conn: asyncpg.Connection, name: str, lock_id: str | None, *, actor: str
) -> int:
    """Delete state `name` and its history, refused with Locked while a lock is held
    under another ID than `lock_id`. Returns how many versions went."""
    async with conn.transaction():
        state_id = await _hold(conn, name)
        if state_id is None:
            raise NotFound(f"no state {name!r}")
        await _refuse_other_holder(conn, state_id, name, lock_id)
        return await delete_state(conn, state_id, name, actor=actor)
