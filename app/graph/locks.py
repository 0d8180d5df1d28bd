"""Whole-state locks (Terraform's LOCK/UNLOCK), and the writes and deletes they guard.

Lock, unlock, write and delete of one state each run in a transaction that
first locks the state's row (FOR UPDATE), so they happen one at a time: no
LOCK or UNLOCK can slip between a write's lock check and the write itself.
Who gets the lock is decided by INSERT ... ON CONFLICT DO NOTHING on
state_locks (one row per state), as the seed schema designs it.
"""

from typing import Any
from uuid import UUID

import asyncpg

from app.graph.errors import Locked, NotFound
from app.graph.events import append_event
from app.graph.store import Written, delete_state, ensure_state, write_version
from app.tfstate import NormalizedState


async def _hold(conn: asyncpg.Connection, name: str) -> UUID | None:
    """Lock the state's row until the transaction ends; None when there is no state."""
    return await conn.fetchval("SELECT id FROM states WHERE name = $1 FOR UPDATE", name)


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


def _lock_detail(info: dict[str, Any]) -> dict[str, Any]:
    return {"id": info.get("ID"), "who": info.get("Who"), "operation": info.get("Operation")}


async def _refuse_other_holder(
    conn: asyncpg.Connection, state_id: UUID, name: str, lock_id: str | None
) -> None:
    holder = await _holder(conn, state_id)
    if holder is not None and holder["lock_id"] != lock_id:
        raise _locked(name, holder)


async def lock(conn: asyncpg.Connection, name: str, info: dict[str, Any], *, actor: str) -> bool:
    """Take the lock of state `name` for the LockInfo `info` (its "ID" names the lock).

    The state need not exist yet. Returns False when that very lock was already
    held (a LOCK retried after a lost response); raises Locked with the holder's
    LockInfo when another lock is held.
    """
    async with conn.transaction():
        state_id = await _hold_or_create(conn, name)
        taken = await conn.fetchval(
            """INSERT INTO state_locks (state_id, lock_id, info) VALUES ($1, $2, $3)
               ON CONFLICT (state_id) DO NOTHING RETURNING true""",
            state_id,
            info["ID"],
            info,
        )
        if not taken:
            await _refuse_other_holder(conn, state_id, name, info["ID"])
            return False
        await append_event(
            conn,
            state_name=name,
            state_id=state_id,
            action="lock",
            actor=actor,
            detail=_lock_detail(info),
        )
    return True


async def unlock(
    conn: asyncpg.Connection, name: str, lock_id: str | None, *, force: bool, actor: str
) -> bool:
    """Release the lock of state `name`; `lock_id` must be the holder's, or None to
    release whatever lock is held. `force` records it as a force-unlock.

    Returns False when no lock was held (a retried UNLOCK); raises Locked with
    the holder's LockInfo when another lock is held.
    """
    async with conn.transaction():
        state_id = await _hold(conn, name)
        holder = await _holder(conn, state_id) if state_id else None
        if holder is None:
            return False
        if lock_id is not None and lock_id != holder["lock_id"]:
            raise _locked(name, holder)
        await conn.execute("DELETE FROM state_locks WHERE state_id = $1", state_id)
        await append_event(
            conn,
            state_name=name,
            state_id=state_id,
            action="force-unlock" if force else "unlock",
            actor=actor,
            detail=_lock_detail(holder["info"]),
        )
    return True


async def guarded_write(
    conn: asyncpg.Connection,
    name: str,
    body: bytes,
    lock_id: str | None,
    *,
    state: NormalizedState,
    actor: str,
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
