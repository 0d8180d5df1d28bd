"""Walking the dependency edges: one hop (dependencies, dependents) and blast radius."""

import enum
from uuid import UUID

import asyncpg

from app.graph.errors import BadInput, LimitExceeded
from app.graph.paging import Keyset, Page, paged_sql, pages_by_owner
from app.graph.resources import RESOURCE_COLUMNS, RESOURCE_JOINS


class Direction(enum.Enum):
    DEPENDENTS = "dependents"  # resources that depend on it: what breaks if it changes
    DEPENDENCIES = "dependencies"  # resources it depends on


# (the edge column matching the resource we stand on, the column of the next one)
_HOP = {
    Direction.DEPENDENTS: ("to_resource_id", "from_resource_id"),
    Direction.DEPENDENCIES: ("from_resource_id", "to_resource_id"),
}
MAX_DEPTH = 50

NEIGHBOUR_KEY = Keyset(("address",), (str,))
BLAST_KEY = Keyset(("depth", "address"), (int, str))


async def neighbours(
    conn: asyncpg.Connection,
    ids: list[UUID],
    direction: Direction,
    *,
    first: int,
    after: tuple[str] | None = None,
) -> dict[UUID, Page[asyncpg.Record]]:
    """Each resource's direct dependencies or dependents, by address."""
    near, far = _HOP[direction]
    sql = paged_sql(
        f"""SELECT d.{near} AS owner, n.id, n.address COLLATE "C" AS address
            FROM resource_dependencies d JOIN resources n ON n.id = d.{far}
            WHERE d.{near} = ANY($1::uuid[])""",
        order="address",
        after="($2::text IS NULL OR address > $2)",
        limit="$3",
        select=RESOURCE_COLUMNS,
        joins=RESOURCE_JOINS,
    )
    records = await conn.fetch(sql, ids, after and after[0], first + 1)
    return pages_by_owner(records, first, NEIGHBOUR_KEY)


# One recursive CTE for all roots. Each step dedupes to one row per (root,
# resource) with the smallest path, so a step holds at most one row per
# resource and the work is bounded by depth x edges even on dense graphs
# (without it, the number of paths grows exponentially with diamonds); a
# resource already on the path is not entered again, so cycles end. A
# resource may still be reached again at a greater depth by a later step;
# DISTINCT ON keeps its shortest depth and, among those, the smallest path.
_BLAST = """
    WITH RECURSIVE walk (root, id, depth, path) AS (
        SELECT r.id, r.id, 0, ARRAY[r.address COLLATE "C"]
        FROM resources r WHERE r.id = ANY($1::uuid[])
      UNION ALL
        SELECT step.root, step.id, step.depth, step.path FROM (
            SELECT w.root, n.id, w.depth + 1 AS depth, w.path || (n.address COLLATE "C") AS path,
                   row_number() OVER (PARTITION BY w.root, n.id
                                      ORDER BY w.path || (n.address COLLATE "C")) AS rank
            FROM walk w
            JOIN resource_dependencies d ON d.{near} = w.id
            JOIN resources n ON n.id = d.{far}
            WHERE w.depth < $2 AND NOT (n.address COLLATE "C") = ANY(w.path)
        ) step WHERE step.rank = 1
    )
    SELECT DISTINCT ON (root, id) root AS owner, id, depth, path,
           path[depth + 1] AS address
    FROM walk WHERE depth > 0
    ORDER BY root, id, depth, path"""


async def blast_radius(
    conn: asyncpg.Connection,
    roots: list[UUID],
    direction: Direction = Direction.DEPENDENTS,
    *,
    max_depth: int = 10,
    first: int,
    after: tuple[int, str] | None = None,
) -> dict[UUID, Page[asyncpg.Record]]:
    """Every resource reachable from each root, once, at its shortest depth (1..max_depth),
    with one shortest path (root first, itself last): by depth, then address."""
    if max_depth < 1:
        raise BadInput(f"maxDepth must be at least 1, got {max_depth}")
    if max_depth > MAX_DEPTH:
        raise LimitExceeded(
            f"maxDepth must be at most {MAX_DEPTH}, got {max_depth}", {"max": MAX_DEPTH}
        )
    near, far = _HOP[direction]
    sql = paged_sql(
        _BLAST.format(near=near, far=far),
        order="depth, address",
        after="($3::int IS NULL OR (depth, address) > ($3::int, $4::text))",
        limit="$5",
        select=f"p.depth, p.path, {RESOURCE_COLUMNS}",
        joins=RESOURCE_JOINS,
    )
    after_depth, after_address = after or (None, None)
    records = await conn.fetch(sql, roots, max_depth, after_depth, after_address, first + 1)
    return pages_by_owner(records, first, BLAST_KEY)
