"""A version's declared edges instance to instance, whatever the grain they are stored
at (app/graph/hops.py expands them)."""

from typing import Any

from app.graph.hops import pairs_sql

_PAIRS = f"SELECT d.* FROM {pairs_sql('$1', '$2')} d"


async def instance_edges(
    conn: Any, name: str, serial: int | None = None
) -> list[tuple[str, str, bool]]:
    """The edges of state `name` at `serial` (None: its current version): (source
    address, target address, direct), sorted."""
    state_id, current = await conn.fetchrow(
        "SELECT id, current_serial FROM states WHERE name = $1", name
    )
    serial = current if serial is None else serial
    address = {
        r["id"]: r["address"]
        for r in await conn.fetch("SELECT id, address FROM resources WHERE state_id = $1", state_id)
    }
    rows = await conn.fetch(_PAIRS, state_id, serial)
    return sorted(
        (address[r["from_resource_id"]], address[r["to_resource_id"]], r["direct"]) for r in rows
    )
