"""Retention: delete old versions of states, and the rows only they held.

The rule, per state: its versions ordered by serial, newest first, a version is kept
when it is among the first `keep_last` (the current version is first, so it is always
kept: keep_last >= 1) OR, with `keep_days` given, when it was written less than
`keep_days` days before the prune (created_at > now() - keep_days). Every other version
is pruned. With keep_days unset, age keeps nothing.

Rows are shared by the versions of their serial range [serial_from, serial_to)
(migration 0005). Pruning leaves every range as it is: a remaining version at serial S
still holds exactly the rows with serial_from <= S < serial_to, so it exports as
before. A row that no remaining version holds is deleted. A row still held keeps its
`state_version_id` (the version that wrote it, which may be gone: no foreign key):
moving it would rewrite every row the oldest pruned version wrote, on every prune.
"""

from dataclasses import dataclass
from uuid import UUID

import asyncpg

from app import globs
from app.errors import BadInput
from app.graph.edges import forget_walks
from app.graph.events import append_event
from app.graph.links import note_sensitive_outputs
from app.graph.raw import delete_unreferenced_chunks


@dataclass(frozen=True)
class Pruned:
    """What a prune removed from one state."""

    state: str
    serials: list[int]  # ascending
    resources: int
    edges: int
    outputs: int
    chunks: int  # raw-byte chunks no remaining version uses


# The rows of `alias` (a resources, edges, outputs, links or lineage row) that a version
# of their state holds: one at a serial in [serial_from, serial_to).
_HELD = """EXISTS (SELECT 1 FROM state_versions v
                  WHERE v.state_id = {alias}.state_id AND v.serial >= {alias}.serial_from
                    AND ({alias}.serial_to IS NULL OR v.serial < {alias}.serial_to))"""
# Only a closed row can lose its last version (an open one is held by the current
# version, never pruned), and only one that began at or before the newest pruned serial.
_ORPHANS = (
    """{alias}.state_id = $1 AND {alias}.serial_to IS NOT NULL
    AND {alias}.serial_from <= $2 AND NOT """
    + _HELD
)


def _for(sql: str, alias: str) -> str:
    return sql.format(alias=alias)


_DELETE_ORPHANS = f"""
    WITH edges AS (DELETE FROM resource_dependencies d WHERE {_for(_ORPHANS, "d")} RETURNING 1),
         rows AS (DELETE FROM resources r WHERE {_for(_ORPHANS, "r")} RETURNING 1),
         outs AS (DELETE FROM outputs o WHERE {_for(_ORPHANS, "o")} RETURNING 1),
         links AS (DELETE FROM state_links l WHERE {_for(_ORPHANS, "l")}),
         lineage AS (DELETE FROM output_lineage x WHERE {_for(_ORPHANS, "x")})
    SELECT (SELECT count(*) FROM rows) AS resources, (SELECT count(*) FROM edges) AS edges,
           (SELECT count(*) FROM outs) AS outputs"""


def check_policy(keep_last: int, keep_days: float | None) -> None:
    if keep_last < 1:
        raise BadInput(f"keep_last must be at least 1 (the current version), got {keep_last}")
    if keep_days is not None and keep_days < 0:
        raise BadInput(f"keep_days must not be negative, got {keep_days}")


def glob_matches(names: list[str], state_glob: str) -> list[str]:
    """The names matching a glob (app/globs.py: `team/*`, `*` crosses `/` too)."""
    return [name for name in names if globs.matches(state_glob, name)]


async def prune(
    conn: asyncpg.Connection,
    *,
    state_glob: str,
    keep_last: int,
    keep_days: float | None,
    actor: str,
) -> list[Pruned]:
    """Prune every state whose name matches `state_glob` (see the module's rule), one
    transaction per state. Returns the states that lost versions, by name."""
    check_policy(keep_last, keep_days)
    states = await conn.fetch('SELECT id, name FROM states ORDER BY name COLLATE "C"')
    matching = set(glob_matches([s["name"] for s in states], state_glob))
    pruned = []
    for record in states:
        if record["name"] in matching:
            done = await prune_state(
                conn, record["id"], record["name"], keep_last, keep_days, actor=actor
            )
            if done is not None:
                pruned.append(done)
    return pruned


async def prune_state(
    conn: asyncpg.Connection,
    state_id: UUID,
    name: str,
    keep_last: int | None,
    keep_days: float | None = None,
    *,
    actor: str,
) -> Pruned | None:
    """Prune one state in one transaction (a savepoint inside a caller's); None when no
    version goes, or when `keep_last` is None (keep everything)."""
    if keep_last is None:
        return None
    check_policy(keep_last, keep_days)
    async with conn.transaction():
        # Serializes with writers (write_version takes the same lock).
        await conn.execute("SELECT 1 FROM states WHERE id = $1 FOR UPDATE", state_id)
        gone = await conn.fetch(
            """WITH ranked AS (
                   SELECT id, serial, created_at,
                          row_number() OVER (ORDER BY serial DESC) AS rank
                   FROM state_versions WHERE state_id = $1)
               DELETE FROM state_versions v USING ranked k
               WHERE v.state_id = $1 AND v.id = k.id AND k.rank > $2
                 AND ($3::float8 IS NULL
                      OR k.created_at <= now() - make_interval(secs => $3 * 86400))
               RETURNING v.id, v.serial""",
            state_id,
            keep_last,
            keep_days,
        )
        if not gone:
            return None
        serials = sorted(r["serial"] for r in gone)
        counts = await conn.fetchrow(_DELETE_ORPHANS, state_id, serials[-1])
        # never None: a SELECT of aggregates without FROM returns exactly one row
        assert counts is not None
        await forget_walks(conn, state_id, serials)
        await note_sensitive_outputs(conn, state_id)
        chunks = await delete_unreferenced_chunks(conn, state_id)
        result = Pruned(
            name, serials, counts["resources"], counts["edges"], counts["outputs"], chunks
        )
        await append_event(
            conn,
            state_name=name,
            state_id=state_id,
            action="prune",
            actor=actor,
            detail={
                "serials": serials,
                "keep_last": keep_last,
                "keep_days": keep_days,
                "removed": {
                    "resources": result.resources,
                    "edges": result.edges,
                    "outputs": result.outputs,
                    "chunks": result.chunks,
                },
            },
        )
    return result
