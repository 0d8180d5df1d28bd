"""The kept blast-radius walks on Citus (app/graph/edges.py keeps a walk in one statement
on a single node): Citus runs a recursive CTE on a shard only in a SELECT, and not inside
an INSERT, so the walk is read on the state's shard, then kept by the statements here."""

import time
from uuid import UUID

import asyncpg

# On Citus, which runs a recursive CTE on a shard only in a SELECT: the walk read (by a
# SELECT on the state's shard), then kept by the statements below.
_WALKED = "WITH RECURSIVE {walk} SELECT * FROM bfs ORDER BY root_id, depth"
_KEEP_WALKED = """
    INSERT INTO blast_walks AS w
        (state_id, serial, root_id, direction, edge_kind, total, sizes, kept)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
    ON CONFLICT (state_id, serial, root_id, direction, edge_kind) DO UPDATE
    SET total = EXCLUDED.total, sizes = EXCLUDED.sizes, kept = EXCLUDED.kept,
        created_at = EXCLUDED.created_at
    RETURNING w.id"""


async def keep_walked(
    conn: asyncpg.Connection,
    walk: str,
    key: tuple[str, str],
    walked: tuple[list[UUID], list[UUID]],
    state: UUID,
    rows: bool,
) -> None:
    """Keeps the walk `walk` (app.graph.edges.walk_sql: from the roots `walked` of
    `state`, $6, those unkept) under `key` (direction, edge kind): the walk read, its
    size kept, then its rows (with `rows`)."""
    levels = await conn.fetch(_WALKED.format(walk=walk), *walked, *key, rows, state)
    by_root: dict[UUID, list[asyncpg.Record]] = {}
    for level in levels:
        by_root.setdefault(level["root_id"], []).append(level)
    walk_ids = {}
    for root, of_root in by_root.items():
        sizes = [len(x["ids"]) for x in of_root if x["depth"] > 0]
        walk_ids[root] = await conn.fetchval(
            _KEEP_WALKED,
            state,
            of_root[0]["serial"],
            root,
            *key,
            sum(sizes),
            sizes,
            rows,
        )
    if not rows:
        return
    await conn.copy_records_to_table(
        "blast_walk_rows",
        columns=["state_id", "walk_id", "depth", "address", "resource_id", "path"],
        records=[
            (state, walk_ids[root], level["depth"], address, row_id, path)
            for root, levels in by_root.items()
            for level in levels
            if level["depth"] > 0
            for row_id, address, path in zip(
                level["ids"], level["addresses"], level["paths"], strict=True
            )
        ],
    )


# On Citus, dropping the walks past their limits reads every shard (they are ordered
# across states): a server does it at most this often, not at every walk kept (the rows
# kept meanwhile may pass the limit until then).
SHARDED_EXPIRY_SECONDS = 10.0
_expired_at = [float("-inf")]


def expiry_due() -> bool:
    """Whether this server drops the walks past their limits now (and notes it did)."""
    now = time.monotonic()
    if now - _expired_at[0] < SHARDED_EXPIRY_SECONDS:
        return False
    _expired_at[0] = now
    return True
