"""The rules of a write's serial and lineage, checked against the current version under
the state's row lock.

What Terraform relies on: serial never goes backwards; the same serial with a different
body is refused, the very same body again is accepted and changes nothing (a retry after
a lost response); lineage is fixed once set (when known), unless the current version is
empty. An encrypted state is numbered as `EncryptedState.as_version` says.
"""

from dataclasses import dataclass
from uuid import UUID

import asyncpg

from app.errors import Conflict
from app.graph.raw import open_md5
from app.tfstate import EncryptedState, NormalizedState, ScannedState


@dataclass(frozen=True)
class Current:
    """The current version, as the rules read it."""

    id: UUID
    serial: int
    lineage: str | None
    md5: bytes  # of its raw bytes
    empty: bool  # neither instances nor outputs, and not encrypted: its lineage may change


async def current_version(conn: asyncpg.Connection, state_id: UUID) -> asyncpg.Record | None:
    return await conn.fetchrow(
        """SELECT v.id, v.serial, v.lineage, v.raw_md5,
                  NOT v.encrypted AND v.resource_count = 0 AND NOT EXISTS (
                      SELECT 1 FROM outputs o
                      WHERE o.state_id = $1 AND o.serial_to IS NULL) AS empty
           FROM state_versions v WHERE v.state_id = $1
           ORDER BY v.serial DESC LIMIT 1""",
        state_id,
    )


async def locked_current(conn: asyncpg.Connection, state_id: UUID) -> Current | None:
    """Lock the state's row, serializing its writers (the checks cannot race), and read its
    current version."""
    await conn.execute("SELECT 1 FROM states WHERE id = $1 FOR UPDATE", state_id)
    record = await current_version(conn, state_id)
    if record is None:
        return None
    md5 = open_md5(record["raw_md5"], state_id)
    return Current(record["id"], record["serial"], record["lineage"], md5, record["empty"])


def numbered(
    state: NormalizedState | ScannedState | EncryptedState, current: Current | None, md5: bytes
) -> NormalizedState | ScannedState:
    """`state` as the version it is stored as: an encrypted one numbered after `current`."""
    if not isinstance(state, EncryptedState):
        return state
    return state.as_version(
        current.serial if current else None,
        current.lineage if current else None,
        same_bytes=current is not None and md5 == current.md5,
    )


def is_retry(
    name: str, state: NormalizedState | ScannedState, md5: bytes, current: Current | None
) -> bool:
    """Whether `state` (of raw bytes hashing to `md5`) is `current` again: the very same
    body at its serial. Conflict when it may not follow `current`."""
    if current is None:
        return False
    if state.serial == current.serial and md5 == current.md5:
        return True
    if current.lineage and state.lineage != current.lineage and not current.empty:
        raise Conflict(
            f"lineage mismatch: state {name!r} has lineage {current.lineage}, "
            f"the new version has {state.lineage}",
            {"current_lineage": current.lineage, "lineage": state.lineage},
        )
    if state.serial <= current.serial:
        raise Conflict(
            f"serial {state.serial} is not newer than the current serial "
            f"{current.serial} of state {name!r}",
            {"current_serial": current.serial, "serial": state.serial},
        )
    return False
