"""The append-only audit trail."""

from typing import Any
from uuid import UUID

import asyncpg


async def append_event(
    conn: asyncpg.Connection,
    *,
    state_name: str,
    action: str,
    actor: str,
    state_id: UUID | None = None,
    serial: int | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    await conn.execute(
        """INSERT INTO events (state_id, state_name, action, actor, serial, detail)
           VALUES ($1, $2, $3, $4, $5, $6)""",
        state_id,
        state_name,
        action,
        actor,
        serial,
        detail or {},
    )
