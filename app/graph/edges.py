"""Walking the dependency edges: one hop (dependencies, dependents) and blast radius."""

import enum
from uuid import UUID

import asyncpg

from app.errors import BadInput, LimitExceeded
from app.graph.queries import valid_at
from app.graph.resources import RESOURCE_COLUMNS, RESOURCE_JOINS, ResourceKey
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


# The resources a statement starts from, `k`: (row id, version id) pairs and their
# 1-based position, each at its version `kv`. A page's owner is that position.
_KEYS = """unnest($1::uuid[], $2::uuid[]) WITH ORDINALITY AS k (id, version_id, ord)
    JOIN state_versions kv ON kv.id = k.version_id"""


def _key_arrays(keys: list[ResourceKey]) -> tuple[list[UUID], list[UUID]]:
    return [row_id for row_id, _ in keys], [version_id for _, version_id in keys]


def _by_key(
    pages: dict[int, Page[asyncpg.Record]], keys: list[ResourceKey]
) -> dict[ResourceKey, Page[asyncpg.Record]]:
    return {keys[ord - 1]: page for ord, page in pages.items()}


async def neighbours(
    conn: asyncpg.Connection,
    keys: list[ResourceKey],
    direction: Direction,
    *,
    first: int,
    after: tuple[str] | None = None,
    direct: bool = False,
) -> dict[ResourceKey, Page[asyncpg.Record]]:
    """Each resource's dependencies or dependents at its version (one hop), by address:
    every declared one, or with `direct` those no other path implies."""
    near, far = _HOP[direction]
    sql = paged_sql(
        # one index probe per resource (LATERAL, not a join the planner may turn into a
        # scan of every edge of every state)
        f"""SELECT k.ord AS owner, n.id, n.state_id, k.version_id,
                   n.address COLLATE "C" AS address
            FROM {_KEYS}
            CROSS JOIN LATERAL (
                SELECT d.{far} AS id FROM resource_dependencies d
                WHERE d.{near} = k.id AND {valid_at("d", "kv.state_id", "kv.serial")}
                  AND (d.direct OR NOT $5) OFFSET 0) d
            CROSS JOIN LATERAL (
                SELECT n.id, n.state_id, n.address FROM resources n
                WHERE n.id = d.id AND n.state_id = kv.state_id OFFSET 0) n""",
        order="address",
        after="($3::text IS NULL OR address > $3)",
        limit="$4",
        select=RESOURCE_COLUMNS,
        joins=RESOURCE_JOINS,
    )
    records = await conn.fetch(sql, *_key_arrays(keys), after and after[0], first + 1, direct)
    return _by_key(pages_by_owner(records, first, NEIGHBOUR_KEY), keys)


# One recursive CTE for all roots, breadth first over direct edges (Terraform's
# dependencies are transitively closed: over every declared edge all depths would be
# 1; the direct ones reach the same resources, app/tfstate/reduction.py): a row per
# root per depth holds that level's resources (ids, addresses, paths: arrays) and
# every resource seen so far, which the next level leaves out. So each resource is entered once, at
# its shortest depth, cycles end, and the work is one visit per edge. Of the
# shortest paths to a resource the smallest by addresses (COLLATE "C") is kept:
# a path is one string, its addresses joined by \x01\x01 with their own \x01
# bytes escaped as \x01\x02, which compares as the list of addresses does (the
# separator sorts below any byte of an address). The smallest path to a level's
# resource extends the smallest path to one of the level before: one min() each.
_ESCAPED = r'''replace(r.address, E'\x01', E'\x01\x02') COLLATE "C"'''
_EDGE_AT_ROOT = valid_at("d", "b.state_id", "b.serial")
_BLAST = rf"""
    WITH RECURSIVE bfs (root, state_id, serial, version_id, depth, ids, addresses, paths, seen)
    AS (
        SELECT k.ord, kv.state_id, kv.serial, k.version_id, 0, ARRAY[r.id],
               ARRAY[r.address COLLATE "C"], ARRAY[{_ESCAPED}], ARRAY[r.id]
        FROM {_KEYS} JOIN resources r ON r.id = k.id AND r.state_id = kv.state_id
      UNION ALL
        SELECT b.root, b.state_id, b.serial, b.version_id, b.depth + 1, n.ids, n.addresses,
               n.paths, b.seen || n.ids
        FROM bfs b CROSS JOIN LATERAL (
            SELECT array_agg(step.id) AS ids, array_agg(r.address COLLATE "C") AS addresses,
                   array_agg(step.path || E'\x01\x01' || {_ESCAPED}) AS paths
            FROM (SELECT d.id, min(f.path) AS path
                  FROM unnest(b.ids, b.paths) AS f (id, path)
                  CROSS JOIN LATERAL (SELECT d.{{far}} AS id FROM resource_dependencies d
                                      WHERE d.{{near}} = f.id AND d.direct
                                        AND {_EDGE_AT_ROOT}
                                      OFFSET 0) d
                  WHERE NOT EXISTS (SELECT FROM unnest(b.seen) AS s (id) WHERE s.id = d.id)
                  GROUP BY d.id) step
            CROSS JOIN LATERAL (SELECT r.address FROM resources r
                                WHERE r.id = step.id AND r.state_id = b.state_id OFFSET 0) r
        ) n
        WHERE b.depth < $3 AND n.ids IS NOT NULL
    )
    SELECT b.root AS owner, x.id, b.state_id, b.version_id, b.depth, x.address, x.path
    FROM bfs b CROSS JOIN LATERAL unnest(b.ids, b.addresses, b.paths) AS x (id, address, path)
    WHERE b.depth > 0"""
# A page row's path, back to its list of addresses.
_PATH = r"""ARRAY(SELECT replace(e.address, E'\x01\x02', E'\x01')
    FROM unnest(string_to_array(p.path, E'\x01\x01')) WITH ORDINALITY AS e (address, n)
    ORDER BY e.n) AS path"""


async def blast_radius(
    conn: asyncpg.Connection,
    roots: list[ResourceKey],
    direction: Direction = Direction.DEPENDENTS,
    *,
    max_depth: int = DEFAULT_DEPTH,
    first: int,
    after: tuple[int, str] | None = None,
) -> dict[ResourceKey, Page[asyncpg.Record]]:
    """Every resource reachable from each root at the root's version, once, at its
    shortest depth (1..max_depth), with one shortest path (root first, itself last):
    by depth, then address."""
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
        after="($4::int IS NULL OR (depth, address) > ($4::int, $5::text))",
        limit="$6",
        select=f"p.depth, {_PATH}, {RESOURCE_COLUMNS}",
        joins=RESOURCE_JOINS,
        owner="1" if len(roots) == 1 else None,
    )
    after_depth, after_address = after or (None, None)
    records = await conn.fetch(
        sql, *_key_arrays(roots), max_depth, after_depth, after_address, first + 1
    )
    return _by_key(pages_by_owner(records, first, BLAST_KEY), roots)
