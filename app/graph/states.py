"""A state's row: made by its first lock or write, deleted with its history."""

from uuid import UUID

import asyncpg

from app.graph import links
from app.graph.edges import forget_walks
from app.graph.events import append_event


async def ensure_state(conn: asyncpg.Connection, name: str, kind: str = "terraform") -> UUID:
    """The state's id, creating its row when it has none (a first lock or write)."""
    state_id = await conn.fetchval(
        """WITH made AS (INSERT INTO states (name, kind) VALUES ($1, $2)
                         ON CONFLICT (name) DO NOTHING RETURNING id)
           SELECT id FROM made UNION ALL SELECT id FROM states WHERE name = $1 LIMIT 1""",
        name,
        kind,
    )
    # None only when another transaction made the row after this statement's snapshot
    found: UUID = state_id or await conn.fetchval("SELECT id FROM states WHERE name = $1", name)
    return found


async def delete_state(conn: asyncpg.Connection, state_id: UUID, name: str, *, actor: str) -> int:
    """Delete a state and its history; its events stay, by name. Returns how many
    versions went. The graph rows have no foreign keys (see migration 0005): they go
    by state_id, then the state (its versions and lock cascade), and its kept walks."""
    # counted first: Citus runs the DELETEs of a statement before its SELECT
    versions: int = await conn.fetchval(
        "SELECT count(*) FROM state_versions WHERE state_id = $1", state_id
    )
    await conn.execute(
        """WITH edges AS (DELETE FROM resource_dependencies WHERE state_id = $1),
                rows AS (DELETE FROM resources WHERE state_id = $1),
                outs AS (DELETE FROM outputs WHERE state_id = $1)
           DELETE FROM policy_violations WHERE state_id = $1""",
        state_id,
    )
    # then the state (a reference table on Citus: a statement of its own)
    await conn.execute("DELETE FROM states WHERE id = $1", state_id)
    await forget_walks(conn, state_id)
    await links.forget_links(conn, state_id)
    await append_event(
        conn, state_name=name, action="delete", actor=actor, detail={"versions": versions}
    )
    return versions
