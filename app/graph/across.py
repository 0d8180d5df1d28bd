"""Blast radius across states (`crossStates`): the walk of app/graph/edges.py, and on
through the links between states (app/graph/links.py).

A hop is a direct edge within a state, or a hop between states: DEPENDENTS, from a
resource to the data sources of the consumers (current versions) that read an output
whose lineage names it; DEPENDENCIES, from such a data source to the resources its
producer's (current) outputs came from. Each hop counts 1 in `depth`; a path lists the
resources from the root (`path`), each with its state (`path_states`).

One recursive CTE for all the roots, breadth first like the single-state walk: a row per
root per depth holds that level's resources (ids, states, serials, paths: arrays) and
every resource seen so far, which the next level leaves out; so each resource is entered
once, at its shortest depth, and cycles between states end. Of the shortest paths to a
resource the smallest is kept, ordered as lists of (state, address): a path is one string,
each resource `state \\x01\\x02 address`, joined by \\x01\\x01, their own \\x01 bytes
escaped as \\x01\\x03, which compares as the list does. The statement returns each root's
page and total. A walk enters no state outside `readable` (a caller's patterns,
app.access): a resource there is neither returned nor counted, and the walk does not go
on through it. Walks across states are not kept (they depend on every consumer's
current version): each page walks again.
"""

import re
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from app.graph import across_steps, shards
from app.graph.edges import Direction, check_cursor_serial, check_depth, with_beyond
from app.graph.hops import DEPENDENCIES_HOP, DEPENDENTS_HOP, configured_hop_sql, hop_sql
from app.graph.queries import valid_at
from app.graph.resources import RESOURCE_COLUMNS, RESOURCE_JOINS, ResourceKey, key_arrays
from app.paging import Keyset, Page, paged_sql, pages_by_owner

# A page row's key: the serial of the root's version, then the page order.
CROSS_BLAST_KEY = Keyset(("walk_serial", "depth", "state_name", "address"), (int, int, str, str))

# The level before, `f`, of the walk's row `b`.
_LEVEL = "unnest(b.ids, b.state_ids, b.serials, b.paths) AS f (id, state_id, serial, path)"
_CURRENT = """CROSS JOIN LATERAL (SELECT serial FROM state_versions
                                 WHERE state_id = {}.id ORDER BY serial DESC LIMIT 1) cv"""
# A configured version (migrations 0029, 0031) walks its configured_edges instead (see
# edges.py).
_CONFIGURED = """EXISTS (SELECT FROM configured_versions cv
                        WHERE cv.state_id = f.state_id AND cv.serial = f.serial)"""


def _configured(direction: Direction) -> str:
    """The configured edges from each of `f`, in a version with a configuration."""
    near, far = DEPENDENTS_HOP if direction is Direction.DEPENDENTS else DEPENDENCIES_HOP
    return configured_hop_sql(
        near, far, at="f.id", state="f.state_id", serial="f.serial", gate=_CONFIGURED
    )


def _declared(direction: Direction) -> str:
    """The direct declared edges from each of `f`, in a version without a configuration."""
    near, far = DEPENDENTS_HOP if direction is Direction.DEPENDENTS else DEPENDENCIES_HOP
    return hop_sql(
        near, far, at="f.id", state="f.state_id", serial="f.serial", direct="{e}.direct",
        gate=f"NOT {_CONFIGURED}",
    )  # fmt: skip


# The next resources (id, state, serial) from each of `f`, with the path to the one
# before and the one before (`src`): within its state, then to the states reading it.
_WITHIN = {
    Direction.DEPENDENTS: f"""
        SELECT d.id, f.state_id, f.serial, f.path, f.id AS src FROM {_LEVEL}
        CROSS JOIN LATERAL (SELECT h.id FROM {_declared(Direction.DEPENDENTS)} h
                          UNION ALL
                            SELECT c.id FROM {_configured(Direction.DEPENDENTS)} c
                            WHERE c.direct
                            OFFSET 0) d""",
    Direction.DEPENDENCIES: f"""
        SELECT d.id, f.state_id, f.serial, f.path, f.id AS src FROM {_LEVEL}
        CROSS JOIN LATERAL (SELECT h.id FROM {_declared(Direction.DEPENDENCIES)} h
                          UNION ALL
                            SELECT c.id FROM {_configured(Direction.DEPENDENCIES)} c
                            WHERE c.direct
                            OFFSET 0) d""",
}
_BETWEEN = {
    Direction.DEPENDENTS: f"""
        SELECT l.resource_id, c.id, cv.serial, f.path, f.id FROM {_LEVEL}
        JOIN output_lineage x ON x.resource_id = f.id AND {valid_at("x", "f.state_id", "f.serial")}
        JOIN states p ON p.id = f.state_id
        JOIN state_links l ON l.producer_name = p.name AND l.serial_to IS NULL
                          AND l.outputs ? x.output_name
        JOIN states c ON c.id = l.state_id AND may_read(c.name, {{readable}}::text[])
        {_CURRENT.format("c")}""",
    Direction.DEPENDENCIES: f"""
        SELECT x.resource_id, p.id, cv.serial, f.path, f.id FROM {_LEVEL}
        JOIN state_links l ON l.resource_id = f.id AND {valid_at("l", "f.state_id", "f.serial")}
        JOIN states p ON p.name = l.producer_name AND may_read(p.name, {{readable}}::text[])
        {_CURRENT.format("p")}
        JOIN output_lineage x ON x.state_id = p.id AND x.serial_to IS NULL
                             AND l.outputs ? x.output_name""",
}


def _hops(direction: Direction, readable: str, *, across: bool = True) -> str:
    """The hops' SQL; `readable`: the parameter holding the states a walk may enter."""
    within = _WITHIN[direction]
    return (
        f"{within}\n      UNION ALL{_BETWEEN[direction].format(readable=readable)}"
        if across
        else within
    )


_STEP = r"""replace(s.name, E'\x01', E'\x01\x03') || E'\x01\x02'
    || replace(r.address, E'\x01', E'\x01\x03')"""
_WALK = rf"""WITH RECURSIVE bfs (root, serial, depth, ids, state_ids, serials, paths, seen) AS (
        SELECT k.ord, kv.serial, 0, ARRAY[r.id], ARRAY[kv.state_id], ARRAY[kv.serial],
               ARRAY[{_STEP} COLLATE "C"], ARRAY[r.id]
        FROM unnest($1::uuid[], $2::uuid[]) WITH ORDINALITY AS k (id, version_id, ord)
        JOIN state_versions kv ON kv.id = k.version_id
        JOIN states s ON s.id = kv.state_id
        JOIN resources r ON r.id = k.id AND r.state_id = kv.state_id
      UNION ALL
        SELECT b.root, b.serial, b.depth + 1, n.ids, n.state_ids, n.serials, n.paths,
               b.seen || n.ids
        FROM bfs b CROSS JOIN LATERAL (
            SELECT array_agg(step.id) AS ids, array_agg(step.state_id) AS state_ids,
                   array_agg(step.serial) AS serials,
                   array_agg(step.path || E'\x01\x01' || {_STEP}) AS paths
            FROM (SELECT h.id, h.state_id, min(h.serial) AS serial,
                         min(h.path COLLATE "C") AS path
                  FROM ({{hops}}) h
                  WHERE NOT EXISTS (SELECT FROM unnest(b.seen) AS seen (id) WHERE seen.id = h.id)
                  GROUP BY h.id, h.state_id) step
            JOIN resources r ON r.id = step.id AND r.state_id = step.state_id
            JOIN states s ON s.id = step.state_id
        ) n
        WHERE n.ids IS NOT NULL
    )"""
# Each root's page: at most $7 resources after ($4 depth, $5 state, $6 address) within
# depth $3 (NULL: all); `beyond` counts the root's members past it.
_LIMIT = "coalesce($3::int, 2147483647)"
_PAGES = paged_sql(
    f"""SELECT n.root AS owner, n.id, n.state_id, v.id AS version_id, n.walk_serial,
              n.depth, s.name COLLATE "C" AS state_name, r.address COLLATE "C" AS address,
              n.path, n.beyond
       FROM (SELECT b.root, b.serial AS walk_serial, b.depth, x.id, x.state_id, x.serial,
                    x.path, t.beyond
             FROM bfs b
             JOIN (SELECT root, coalesce(sum(cardinality(ids))
                                         FILTER (WHERE depth > {_LIMIT}), 0)::int AS beyond
                   FROM bfs GROUP BY root) t ON t.root = b.root
             CROSS JOIN LATERAL unnest(b.ids, b.state_ids, b.serials, b.paths)
                 AS x (id, state_id, serial, path)
             WHERE b.depth > 0 AND b.depth <= {_LIMIT}) n
       JOIN state_versions v ON v.state_id = n.state_id AND v.serial = n.serial
       JOIN states s ON s.id = n.state_id
       JOIN resources r ON r.id = n.id AND r.state_id = n.state_id""",
    order="depth, state_name, address",
    after="(depth, state_name, address) > ($4, $5, $6)",
    limit="$7",
    select=f"p.walk_serial, p.depth, p.path AS encoded_path, p.beyond, {RESOURCE_COLUMNS}",
    joins=RESOURCE_JOINS,
)
# the page's WITH joins the walk's
_SQL = {
    direction: f"{_WALK.format(hops=_hops(direction, '$8'))}, {_PAGES.strip().removeprefix('WITH')}"
    for direction in Direction
}


_STEPS = re.compile("\x01[\x01\x02]")  # between a state and its address, between steps


def decode_path(encoded: str) -> tuple[list[str], list[str]]:
    """A walk's path string, back to its states and addresses."""
    parts = _STEPS.split(encoded)  # state, address, state, address...
    if "\x01\x03" in encoded:
        parts = [part.replace("\x01\x03", "\x01") for part in parts]
    return parts[0::2], parts[1::2]


async def cross_blast_radius(
    conn: asyncpg.Connection,
    roots: list[ResourceKey],
    direction: Direction = Direction.DEPENDENTS,
    *,
    max_depth: int | None = None,
    first: int,
    after: tuple[int, int, str, str] | None = None,
    rows: bool = True,
    readable: list[str] | None = None,
) -> dict[ResourceKey, Page[dict[str, Any]]]:
    """As edges.blast_radius, across states: every resource reachable from each root, once,
    at its shortest depth, by depth, state name, then address; each row a resource's
    columns (RESOURCE_COLUMNS, at its version) with `depth`, `path` and `path_states`.
    With `max_depth` a page lists (and its total counts) the members within it; its
    `beyond` counts those deeper (the walk goes to the end either way).
    `after` is a CROSS_BLAST_KEY; `readable`: the states it may enter (None: all). A root
    with nothing in reach has no page."""
    check_depth(max_depth)
    start = after[1:] if after else (0, "", "")  # (0, "", ""): before depth 1
    records: list[Any]
    if shards.sharded(conn):  # Citus: in steps, a state at a time
        records = await across_steps.walked_pages(
            conn,
            roots,
            direction,
            max_depth=max_depth,
            first=first,
            after=after,
            rows=rows,
            readable=readable,
        )
    else:
        records = await conn.fetch(
            _SQL[direction],
            *key_arrays(roots),
            max_depth,
            *start,
            first + 1 if rows else 0,
            readable,
        )
    found: list[dict[str, Any]] = []
    for record in records:
        row = dict(record)
        if row["rn"] is not None:
            if after is not None:
                check_cursor_serial(after[0], row["walk_serial"])
            row["path_states"], row["path"] = decode_path(row["encoded_path"])
        found.append(row)
    counted = [r for r in found if r["total"]]
    pages = with_beyond(pages_by_owner(counted, first, CROSS_BLAST_KEY), counted)
    return {roots[owner - 1]: page for owner, page in pages.items()}


# Every resource reachable from any of the roots, in one walk (breadth first from all of
# them at once): each entered once, at its shortest depth from any root, with the
# smallest of its shortest paths; a root is entered too when another root reaches it.
# The roots: the resources of version $1 at addresses $2. Each level also keeps every hop
# taken from the level before (`srcs` -> `dsts`), those to resources already entered
# included: which roots reach a resource follows from them.
_REACH = rf"""WITH RECURSIVE bfs (depth, ids, state_ids, serials, paths, seen, srcs, dsts) AS (
        SELECT 0, array_agg(r.id), array_agg(kv.state_id), array_agg(kv.serial),
               array_agg({_STEP} COLLATE "C"), '{{{{}}}}'::uuid[], '{{{{}}}}'::uuid[],
               '{{{{}}}}'::uuid[]
        FROM state_versions kv
        JOIN states s ON s.id = kv.state_id
        JOIN resources r ON {valid_at("r", "kv.state_id", "kv.serial")}
                        AND r.address = ANY($2::text[])
        WHERE kv.id = $1
      UNION ALL
        SELECT b.depth + 1, coalesce(n.ids, '{{{{}}}}'), coalesce(n.state_ids, '{{{{}}}}'),
               coalesce(n.serials, '{{{{}}}}'), coalesce(n.paths, '{{{{}}}}'), b.seen || n.ids,
               coalesce(n.srcs, '{{{{}}}}'), coalesce(n.dsts, '{{{{}}}}')
        FROM bfs b CROSS JOIN LATERAL (
            WITH h AS MATERIALIZED ({{hops}})
            SELECT m.*, e.* FROM (
                SELECT array_agg(step.id) AS ids, array_agg(step.state_id) AS state_ids,
                       array_agg(step.serial) AS serials,
                       array_agg(step.path || E'\x01\x01' || {_STEP}) AS paths
                FROM (SELECT h.id, h.state_id, min(h.serial) AS serial,
                             min(h.path COLLATE "C") AS path
                      FROM h
                      WHERE NOT EXISTS (SELECT FROM unnest(b.seen) AS seen (id)
                                        WHERE seen.id = h.id)
                      GROUP BY h.id, h.state_id) step
                JOIN resources r ON r.id = step.id AND r.state_id = step.state_id
                JOIN states s ON s.id = step.state_id) m
            CROSS JOIN (SELECT array_agg(h.src) AS srcs, array_agg(h.id) AS dsts FROM h) e
        ) n
        WHERE cardinality(b.ids) > 0
    )
    SELECT depth, ids, paths, srcs, dsts FROM bfs"""
_REACH_SQL = {
    across: _REACH.format(hops=_hops(Direction.DEPENDENTS, "$3", across=across))
    for across in (False, True)
}


@dataclass(frozen=True)
class Reached:
    """A walk from many roots: the roots (row ids, with their addresses), each resource
    (row id) reached, at its shortest depth, with its path (states and addresses), and
    every hop taken (row id -> row id)."""

    roots: list[tuple[UUID, str]]
    members: dict[UUID, tuple[int, list[str], list[str]]]  # id -> depth, states, addresses
    hops: list[tuple[UUID, UUID]]


async def reach(
    conn: asyncpg.Connection,
    version_id: UUID,
    addresses: list[str],
    *,
    across: bool,
    readable: list[str] | None = None,
) -> Reached:
    """The resources depending on any of the resources at `addresses` in version
    `version_id` (DEPENDENTS), in one statement: within their state, or with `across` on
    through the states reading their outputs (those `readable` only, None: all). The
    roots come by address. On Citus, a state at a time (app/graph/across_steps.py)."""
    roots: list[tuple[UUID, str]] = []
    members: dict[UUID, tuple[int, list[str], list[str]]] = {}
    hops: list[tuple[UUID, UUID]] = []
    if shards.sharded(conn):  # Citus: a state at a time, each statement naming its state
        roots, walked, hops = await across_steps.reached(
            conn, version_id, addresses, readable, across=across
        )
        for row_id, (depth, encoded) in walked.items():
            states, path = decode_path(encoded)
            members[row_id] = (depth, states, path)
        return Reached(sorted(roots, key=lambda root: root[1]), members, hops)
    # within the roots' state no state is entered, so none is checked
    records = await conn.fetch(
        _REACH_SQL[across], version_id, addresses, *([readable] if across else [])
    )
    for record in sorted(records, key=lambda r: r["depth"]):
        depth = record["depth"]
        hops.extend(zip(record["srcs"], record["dsts"], strict=True))
        for row_id, encoded in zip(record["ids"] or (), record["paths"] or (), strict=True):
            states, path = decode_path(encoded)
            if depth == 0:
                roots.append((row_id, path[-1]))
            else:
                members[row_id] = (depth, states, path)
    return Reached(sorted(roots, key=lambda root: root[1]), members, hops)
