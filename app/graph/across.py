"""Blast radius across states (`crossStates`): the walk of app/graph/edges.py, and on
through the links between states (app/graph/links.py).

A hop is a direct edge within a state, or a hop between states: DEPENDENTS, from a
resource to the data sources of the consumers (current versions) that read an output
whose lineage names it; DEPENDENCIES, from such a data source to the resources its
producer's (current) outputs came from. Each hop counts 1 in `depth`; a path lists the
resources from the root (`path`), each with its state (`path_states`).

The walk is breadth first, one statement per level for all the roots (so at most
`max_depth` statements): each level's resources are entered once, at their shortest depth
(the ones already seen are left out, so cycles between states end). Of the shortest
paths to a resource the smallest is kept, ordered as (state, address) lists: the level's
resources are ranked by (their best parent's rank, state, address), so a resource's best
parent is its parent of lowest rank. Walks across states are not kept (they depend on
every consumer's current version): each page walks again.
"""

from typing import Any, NamedTuple
from uuid import UUID

import asyncpg

from app.graph.edges import Direction, check_cursor_serial, check_depth
from app.graph.queries import valid_at
from app.graph.resources import ResourceKey, key_arrays, resources_by_keys
from app.jsonutil import gc_paused
from app.paging import Keyset, Page

# A page row's key: the serial of the root's version, then the page order.
CROSS_BLAST_KEY = Keyset(("serial", "depth", "state_name", "address"), (int, int, str, str))

# The level before, `f`: (root, state, serial, row id, rank): arrays $1..$4 of (root,
# version, row id, rank), the versions (state, serial) $5, $6 (a few, for many rows).
_LEVEL = """(SELECT f.root, w.state_id, w.serial, f.id, f.rank
     FROM unnest($1::int[], $2::int[], $3::uuid[], $4::int[]) AS f (root, at, id, rank)
     JOIN unnest($5::uuid[], $6::bigint[]) WITH ORDINALITY AS w (state_id, serial, at)
       ON w.at = f.at) f"""
_CURRENT = """CROSS JOIN LATERAL (SELECT serial FROM state_versions
                                 WHERE state_id = {}.id ORDER BY serial DESC LIMIT 1) cv"""
_HOPS = {
    Direction.DEPENDENTS: f"""
        SELECT f.root, f.state_id, f.serial, d.id, f.rank FROM {_LEVEL}
        CROSS JOIN LATERAL (SELECT d.from_resource_id AS id FROM resource_dependencies d
                            WHERE d.to_resource_id = f.id AND d.direct
                              AND {valid_at("d", "f.state_id", "f.serial")} OFFSET 0) d
      UNION ALL
        SELECT f.root, c.id, cv.serial, l.resource_id, f.rank FROM {_LEVEL}
        JOIN output_lineage x ON x.resource_id = f.id AND {valid_at("x", "f.state_id", "f.serial")}
        JOIN states p ON p.id = f.state_id
        JOIN state_links l ON l.producer_name = p.name AND l.serial_to IS NULL
                          AND l.outputs ? x.output_name
        JOIN states c ON c.id = l.state_id
        {_CURRENT.format("c")}""",
    Direction.DEPENDENCIES: f"""
        SELECT f.root, f.state_id, f.serial, d.id, f.rank FROM {_LEVEL}
        CROSS JOIN LATERAL (SELECT d.to_resource_id AS id FROM resource_dependencies d
                            WHERE d.from_resource_id = f.id AND d.direct
                              AND {valid_at("d", "f.state_id", "f.serial")} OFFSET 0) d
      UNION ALL
        SELECT f.root, p.id, cv.serial, x.resource_id, f.rank FROM {_LEVEL}
        JOIN state_links l ON l.resource_id = f.id AND {valid_at("l", "f.state_id", "f.serial")}
        JOIN states p ON p.name = l.producer_name
        {_CURRENT.format("p")}
        JOIN output_lineage x ON x.state_id = p.id AND x.serial_to IS NULL
                             AND l.outputs ? x.output_name""",
}
# The next level: each resource reached once per root, with its best parent's rank and
# its own (by that parent's rank, state, address), in page order (state, address).
_NEXT = """
    SELECT n.root, n.state_id, n.serial, n.id, n.parent, v.id AS version_id,
           r.address COLLATE "C" AS address, s.name COLLATE "C" AS state_name,
           (row_number() OVER (PARTITION BY n.root ORDER BY n.parent, s.name COLLATE "C",
                                                            r.address COLLATE "C"))::int AS rank
    FROM (SELECT h.root, h.state_id, min(h.serial) AS serial, h.id, min(h.rank) AS parent
          FROM ({hops}) h GROUP BY h.root, h.state_id, h.id) n
    JOIN resources r ON r.id = n.id AND r.state_id = n.state_id
    JOIN states s ON s.id = n.state_id
    JOIN state_versions v ON v.state_id = n.state_id AND v.serial = n.serial
    ORDER BY n.root, state_name, address"""
_ROOTS = """
    SELECT k.ord::int AS root, r.state_id, kv.serial, kv.id AS version_id, r.id, r.address,
           s.name AS state_name, 0 AS rank
    FROM unnest($1::uuid[], $2::uuid[]) WITH ORDINALITY AS k (id, version_id, ord)
    JOIN state_versions kv ON kv.id = k.version_id
    JOIN states s ON s.id = kv.state_id
    JOIN resources r ON r.id = k.id AND r.state_id = kv.state_id"""


class Node(NamedTuple):
    """A resource the walk entered: at its version, with the node it came from."""

    root: int
    state_id: UUID
    serial: int
    version_id: UUID
    id: UUID
    state_name: str
    address: str
    depth: int
    rank: int  # in its level
    parent: "Node | None"

    def path(self) -> list["Node"]:
        nodes: list[Node] = []
        node: Node | None = self
        while node is not None:
            nodes.append(node)
            node = node.parent
        return nodes[::-1]


async def _walk(
    conn: asyncpg.Connection, roots: list[ResourceKey], direction: Direction, max_depth: int
) -> tuple[dict[int, list[Node]], dict[int, int]]:
    """Each root's reach (1-based root -> nodes in page order, root excluded) and its
    version's serial."""
    level = [
        Node(r["root"], r["state_id"], r["serial"], r["version_id"], r["id"], r["state_name"],
             r["address"], 0, 0, None)
        for r in await conn.fetch(_ROOTS, *key_arrays(roots))
    ]  # fmt: skip
    serials = {node.root: node.serial for node in level}
    seen = {(node.root, node.id) for node in level}
    reach: dict[int, list[Node]] = {root: [] for root in serials}
    sql = _NEXT.format(hops=_HOPS[direction])
    # Many small objects that form no cycle: GC passes would walk them over and over.
    with gc_paused():
        for depth in range(1, max_depth + 1):
            if not level:
                break
            versions: dict[tuple[UUID, int], int] = {}
            at = [versions.setdefault((n.state_id, n.serial), len(versions) + 1) for n in level]
            records = await conn.fetch(
                sql,
                [n.root for n in level],
                at,
                [n.id for n in level],
                [n.rank for n in level],
                [state_id for state_id, _ in versions],
                [serial for _, serial in versions],
            )
            parents = {(n.root, n.rank): n for n in level}
            level = []
            for r in records:
                root, row_id = r["root"], r["id"]
                if (root, row_id) in seen:
                    continue
                seen.add((root, row_id))
                node = Node(
                    root, r["state_id"], r["serial"], r["version_id"], row_id, r["state_name"],
                    r["address"], depth, r["rank"], parents[(root, r["parent"])],
                )  # fmt: skip
                level.append(node)
                reach[root].append(node)
    return reach, serials


async def cross_blast_radius(
    conn: asyncpg.Connection,
    roots: list[ResourceKey],
    direction: Direction = Direction.DEPENDENTS,
    *,
    max_depth: int,
    first: int,
    after: tuple[int, int, str, str] | None = None,
    rows: bool = True,
) -> dict[ResourceKey, Page[dict[str, Any]]]:
    """As edges.blast_radius, across states: every resource reachable from each root, once,
    at its shortest depth, by depth, state name, then address; each row a resource's
    columns (RESOURCE_COLUMNS, at its version) with `depth`, `path` and `path_states`.
    `after` is a CROSS_BLAST_KEY. A root with nothing in reach has no page."""
    check_depth(max_depth)
    reach, serials = await _walk(conn, roots, direction, max_depth)
    pages: dict[int, tuple[list[Node], int, bool]] = {}
    for root, nodes in reach.items():
        if not nodes:
            continue
        if after is not None:
            check_cursor_serial(after[0], serials[root])
            nodes_after = [n for n in nodes if (n.depth, n.state_name, n.address) > after[1:]]
        else:
            nodes_after = nodes
        shown = nodes_after[:first] if rows else []
        pages[root] = (shown, len(nodes), len(nodes_after) > first)
    found = await _resources(conn, [n for shown, _, _ in pages.values() for n in shown])
    result: dict[ResourceKey, Page[dict[str, Any]]] = {}
    for root, (shown, total, has_next) in pages.items():
        page_rows = [
            {
                **found[n.id],
                "depth": n.depth,
                "path": [p.address for p in path],
                "path_states": [p.state_name for p in path],
            }
            for n in shown
            for path in [n.path()]
        ]
        keys = [(serials[root], n.depth, n.state_name, n.address) for n in shown]
        result[roots[root - 1]] = Page(page_rows, keys, total, has_next)
    return result


async def _resources(conn: asyncpg.Connection, nodes: list[Node]) -> dict[UUID, asyncpg.Record]:
    """The resource rows of `nodes`, each at its version."""
    if not nodes:
        return {}
    keys = [(n.id, n.version_id) for n in nodes]
    return {key[0]: record for key, record in (await resources_by_keys(conn, keys)).items()}
