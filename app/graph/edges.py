"""Walking the dependency edges: one hop (dependencies, dependents) and blast radius."""

import enum
from uuid import UUID

import asyncpg

from app.errors import BadInput, LimitExceeded
from app.graph.resources import RESOURCE_COLUMNS, RESOURCE_JOINS
from app.paging import Keyset, Page, paged_sql, pages_by_owner


class Direction(enum.Enum):
    DEPENDENTS = "dependents"  # resources that depend on it: what breaks if it changes
    DEPENDENCIES = "dependencies"  # resources it depends on


# (the edge column matching the resource we stand on, the column of the next one)
_HOP = {
    Direction.DEPENDENTS: ("to_resource_id", "from_resource_id"),
    Direction.DEPENDENCIES: ("from_resource_id", "to_resource_id"),
}
DEFAULT_DEPTH = 10
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


# One recursive CTE for all roots, breadth first: a row per root per depth holds
# that level's resources (ids, addresses, paths: arrays) and every resource seen
# so far, which the next level leaves out. So each resource is entered once, at
# its shortest depth, cycles end, and the work is one visit per edge. Of the
# shortest paths to a resource the smallest by addresses (COLLATE "C") is kept:
# a path is one string, its addresses joined by \x01\x01 with their own \x01
# bytes escaped as \x01\x02, which compares as the list of addresses does (the
# separator sorts below any byte of an address). The smallest path to a level's
# resource extends the smallest path to one of the level before: one min() each.
_ESCAPED = r'''replace(r.address, E'\x01', E'\x01\x02') COLLATE "C"'''
_BLAST = rf"""
    WITH RECURSIVE bfs (root, depth, ids, addresses, paths, seen) AS (
        SELECT r.id, 0, ARRAY[r.id], ARRAY[r.address COLLATE "C"], ARRAY[{_ESCAPED}], ARRAY[r.id]
        FROM resources r WHERE r.id = ANY($1::uuid[])
      UNION ALL
        SELECT b.root, b.depth + 1, n.ids, n.addresses, n.paths, b.seen || n.ids
        FROM bfs b CROSS JOIN LATERAL (
            SELECT array_agg(step.id) AS ids, array_agg(r.address COLLATE "C") AS addresses,
                   array_agg(step.path || E'\x01\x01' || {_ESCAPED}) AS paths
            FROM (SELECT d.id, min(f.path) AS path
                  FROM unnest(b.ids, b.paths) AS f (id, path)
                  CROSS JOIN LATERAL (SELECT d.{{far}} AS id FROM resource_dependencies d
                                      WHERE d.{{near}} = f.id OFFSET 0) d
                  WHERE NOT EXISTS (SELECT FROM unnest(b.seen) AS s (id) WHERE s.id = d.id)
                  GROUP BY d.id) step
            CROSS JOIN LATERAL (SELECT r.address FROM resources r
                                WHERE r.id = step.id OFFSET 0) r
        ) n
        WHERE b.depth < $2 AND n.ids IS NOT NULL
    )
    SELECT b.root AS owner, x.id, b.depth, x.address, x.path
    FROM bfs b CROSS JOIN LATERAL unnest(b.ids, b.addresses, b.paths) AS x (id, address, path)
    WHERE b.depth > 0"""
# A page row's path, back to its list of addresses.
_PATH = r"""ARRAY(SELECT replace(e.address, E'\x01\x02', E'\x01')
    FROM unnest(string_to_array(p.path, E'\x01\x01')) WITH ORDINALITY AS e (address, n)
    ORDER BY e.n) AS path"""


async def blast_radius(
    conn: asyncpg.Connection,
    roots: list[UUID],
    direction: Direction = Direction.DEPENDENTS,
    *,
    max_depth: int = DEFAULT_DEPTH,
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
        select=f"p.depth, {_PATH}, {RESOURCE_COLUMNS}",
        joins=RESOURCE_JOINS,
        owner="($1::uuid[])[1]" if len(roots) == 1 else None,
    )
    after_depth, after_address = after or (None, None)
    records = await conn.fetch(sql, roots, max_depth, after_depth, after_address, first + 1)
    return pages_by_owner(records, first, BLAST_KEY)
