"""Walking the dependency edges: one hop (dependencies, dependents) and blast radius,
whose walks are kept for the pages that follow (migration 0010)."""

import enum
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, TypeVar
from uuid import UUID

import asyncpg

from app.errors import BadInput
from app.graph import shards, walk_steps
from app.graph.hops import (
    DEPENDENCIES_HOP,
    DEPENDENTS_HOP,
    configured_hop_sql,
    hop_sql,
)
from app.graph.resources import (
    KEYS_AT_VERSIONS,
    ROW_COLUMNS,
    ResourceKey,
    by_key,
    json_columns,
    key_arrays,
    keys_at_versions,
    resource_columns,
    resource_joins,
    row_join,
)
from app.paging import Keyset, Page, paged_sql, pages_by_owner


class Direction(enum.Enum):
    DEPENDENTS = "dependents"  # resources that depend on it: what breaks if it changes
    DEPENDENCIES = "dependencies"  # resources it depends on


# (the edge column matching the resource we stand on, the column of the next one)
HOP = {Direction.DEPENDENTS: DEPENDENTS_HOP, Direction.DEPENDENCIES: DEPENDENCIES_HOP}

R = TypeVar("R")

NEIGHBOUR_KEY = Keyset(("address",), (str,))
# A blast radius page row's key: the serial of the version walked, then the page order.
BLAST_KEY = Keyset(("serial", "depth", "address"), (int, int, str))
# Whether the version `kv` has a configuration's edges (migration 0029,
# app/configuration/edges.py): its direct edges are then those of configured_edges.
# Every statement here is of one state, its id a parameter (app/graph/shards.py).
_CONFIGURED = """EXISTS (SELECT FROM configured_versions cv
                       WHERE cv.state_id = {state} AND cv.serial = kv.serial)"""


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
    every declared one, or with `direct` those no other path implies (in a configured
    version, those its configuration's references make). A statement per state."""
    near, far = HOP[direction]

    def statement(state: str | None) -> str:
        at = state or "kv.state_id"
        return paged_sql(
            # one index probe per resource (LATERAL, not a join the planner may turn into
            # a scan of every edge of every state)
            f"""SELECT k.ord AS owner, n.id, n.state_id, k.version_id,
                       n.address COLLATE "C" AS address
                FROM {keys_at_versions(state) if state else KEYS_AT_VERSIONS}
                CROSS JOIN LATERAL (SELECT $5 AND {_CONFIGURED.format(state=at)} AS on) cfg
                CROSS JOIN LATERAL (
                    SELECT h.id FROM {
                hop_sql(
                    near,
                    far,
                    at="k.id",
                    state=at,
                    serial="kv.serial",
                    direct="({e}.direct OR NOT $5)",
                    gate="NOT cfg.on",
                )
            } h
                  UNION ALL
                    SELECT c.id FROM {
                configured_hop_sql(
                    near, far, at="k.id", state=at, serial="kv.serial", gate="cfg.on"
                )
            } c
                    WHERE c.direct
                    OFFSET 0) d
                CROSS JOIN LATERAL (
                    SELECT n.id, n.state_id, n.address FROM resources n
                    WHERE n.id = d.id AND n.state_id = {at} OFFSET 0) n""",
            order="address",
            after="($3::text IS NULL OR address > $3)",
            limit="$4",
            select=resource_columns(state),
            joins=resource_joins(state or "p.state_id"),
        )

    async def of_state(
        keys: list[ResourceKey], state: UUID | None
    ) -> dict[ResourceKey, Page[asyncpg.Record]]:
        records = await conn.fetch(
            statement("$6" if state is not None else None),
            *key_arrays(keys),
            after and after[0],
            first + 1,
            direct,
            *shards.pinned(state),
        )
        return by_key(pages_by_owner(records, first, NEIGHBOUR_KEY), keys)

    return await shards.per_state(conn, keys, lambda k: k[1], of_state)


# Blast radius: one recursive CTE for all roots, breadth first over direct edges, to the
# end (cycles end): a row per root per depth holds that level's resources (ids,
# addresses, paths: arrays) and every resource seen so far, which the next level leaves
# out. So each resource is entered once, at its shortest depth over direct edges.
#
# Its members are those of the declared edges' closure: the direct edges reach every
# resource the declared ones do (app/tfstate/reduction.py keeps reachability, exact or
# one step), so the walk over them is the closure, with depths and paths that are not
# all 1 (Terraform's lists are transitively closed: over every declared edge, every
# member would sit at depth 1).
# Of the shortest paths to a resource the smallest by addresses (COLLATE "C") is kept:
# a path is one string, its addresses joined by \x01\x01 with their own \x01 bytes
# escaped as \x01\x02, which compares as the list of addresses does (the separator
# sorts below any byte of an address). The smallest path to a level's resource extends
# the smallest path to one of the level before: one min() each.
#
# The whole radius is walked for any page of it (its total, shortest depths and paths
# need every resource), so a walk is kept (migrations 0010, 0023) and every page reads
# its slice by (depth, address): the first page walks, the next ones cost a page. A kept
# walk is keyed by what decides its answer: the root's state and version serial (versions
# never change), the root, direction and the edges followed (DIRECT_EDGES today). A
# maxDepth does not shorten the walk: a page with one shows the members within it and
# counts those beyond (the walk keeps how many each depth has), so every limit reads
# the same kept walk and no answer is silently partial.

DIRECT_EDGES = "direct"  # the walk's edge kind: the edges no other path implies


@dataclass(frozen=True)
class WalkLimits:
    """How many kept walks stay: `rows` in all (a walk counts its rows and one), none
    older than `seconds`. Applied whenever a walk is kept: the oldest go first, but the
    newest always stays (a bigger walk than `rows` would otherwise be walked per page)."""

    rows: int
    seconds: int


_ESCAPED = r'''replace(r.address, E'\x01', E'\x01\x02') COLLATE "C"'''
# The roots `k` (row id, version id) at their version `kv`, and their rows `r`.
_ROOTS = """unnest($1::uuid[], $2::uuid[]) AS k (id, version_id)
    JOIN state_versions kv ON kv.id = k.version_id{pinned}
    JOIN resources r ON r.id = k.id AND r.state_id = {state}"""
# The next resources `d` (d.id) from a resource `f` of the level before, at the root's version.
# A configured version (migrations 0029, 0031, app/configuration/edges.py) walks its own
# copy of the edges, whose `direct` follows the configuration's references;
# `b.configured` says which, once per root.
_NEXT = """CROSS JOIN LATERAL (SELECT h.id FROM {declared} h
                  UNION ALL
                    SELECT c.id FROM {configured} c WHERE c.direct
                    OFFSET 0) d
    WHERE NOT EXISTS (SELECT FROM unnest(b.seen) AS s (id) WHERE s.id = d.id)"""


def _next(near: str, far: str, walk_state: str) -> str:
    """`_NEXT` one way, over the edges of state `walk_state` (an expression)."""
    declared = hop_sql(
        near, far, at="f.id", state=walk_state, serial="b.serial", direct="{e}.direct",
        gate="NOT b.configured",
    )  # fmt: skip
    configured = configured_hop_sql(
        near, far, at="f.id", state=walk_state, serial="b.serial", gate="b.configured"
    )
    return _NEXT.format(declared=declared, configured=configured)


_WALK = rf"""bfs (root_id, state_id, serial, depth, ids, addresses, paths, seen, configured) AS (
        SELECT k.id, kv.state_id, kv.serial, 0, ARRAY[r.id], ARRAY[r.address COLLATE "C"],
               ARRAY[{_ESCAPED}], ARRAY[r.id], {_CONFIGURED}
        FROM {_ROOTS} WHERE {{roots}}
      UNION ALL
        SELECT b.root_id, b.state_id, b.serial, b.depth + 1, n.ids, n.addresses, n.paths,
               b.seen || n.ids, b.configured
        FROM bfs b CROSS JOIN LATERAL (
            SELECT array_agg(step.id) AS ids, array_agg(r.address COLLATE "C") AS addresses,
                   array_agg(step.path || E'\x01\x01' || {_ESCAPED}) AS paths
            FROM (SELECT d.id, min(f.path) AS path
                  FROM unnest(b.ids, b.paths) AS f (id, path) {{next}}
                  GROUP BY d.id) step
            CROSS JOIN LATERAL (SELECT r.address FROM resources r
                                WHERE r.id = step.id AND r.state_id = {{walk_state}} OFFSET 0) r
        ) n
        WHERE n.ids IS NOT NULL
    )"""
# The same walk for its size only: no addresses, no paths.
_COUNT_WALK = f"""bfs (root_id, state_id, serial, depth, ids, seen, configured) AS (
        SELECT k.id, kv.state_id, kv.serial, 0, ARRAY[r.id], ARRAY[r.id], {_CONFIGURED}
        FROM {_ROOTS} WHERE {{roots}}
      UNION ALL
        SELECT b.root_id, b.state_id, b.serial, b.depth + 1, n.ids, b.seen || n.ids,
               b.configured
        FROM bfs b CROSS JOIN LATERAL (
            SELECT array_agg(step.id) AS ids
            FROM (SELECT d.id FROM unnest(b.ids) AS f (id) {{next}} GROUP BY d.id) step
        ) n
        WHERE n.ids IS NOT NULL
    )"""


def walk_sql(
    direction: Direction, *, state: str | None = None, roots: str = "true", paths: bool = True
) -> str:
    """The walk, a CTE of WITH RECURSIVE: `bfs (root_id, state_id, serial, depth, ids,
    addresses, paths, seen, configured)`, a row per root per level, from the roots $1 (row
    ids) at $2 (version ids) that pass `roots` (a condition on `k`, `kv`) to the end;
    without `paths`, only `bfs (root_id, state_id, serial, depth, ids, seen, configured)`.
    `state`: the parameter naming the roots' state (one state, on Citus), else each
    table joins its root's."""
    near, far = HOP[direction]
    walk_state = state or "b.state_id"
    return (_WALK if paths else _COUNT_WALK).format(
        roots=roots,
        next=_next(near, far, walk_state),
        pinned=f" AND kv.state_id = {state}" if state else "",
        state=state or "kv.state_id",
        walk_state=walk_state,
    )


# A kept walk's key: `w` a blast_walks row, or the roots `k` at `kv` walked with $3
# (direction), $4 (edge kind); `{state}` the roots' state.
WALK_OF_ROOT = """w.state_id = {state} AND w.serial = kv.serial AND w.root_id = k.id
    AND w.direction = $3 AND w.edge_kind = $4"""
# The key as one number, for an advisory lock: who walks a key, or expires its walk, holds it.
_LOCK_KEY = "hashtextextended(concat_ws(' ', {}, {}, {}, {}, {}), 0)"
_ROOT_LOCK = _LOCK_KEY.format("kv.state_id", "kv.serial", "k.id", "$3::text", "$4::text")
_WALK_LOCK = _LOCK_KEY.format("w.state_id", "w.serial", "w.root_id", "w.direction", "w.edge_kind")

# Waits until no one else walks these keys (in a fixed order: no deadlock between batches).
_LOCK_ROOTS = {
    sharded: f"""SELECT pg_advisory_xact_lock(lock) FROM unnest(ARRAY(
    SELECT DISTINCT {_ROOT_LOCK}
    FROM unnest($1::uuid[], $2::uuid[]) AS k (id, version_id)
    JOIN state_versions kv ON kv.id = k.version_id{" AND kv.state_id = $5" if sharded else ""}
    ORDER BY 1)) AS lock"""
    for sharded in (False, True)
}
# The roots still to walk once the locks are held: no walk kept for them (or, with $5, a
# walk that only counted).
_UNKEPT = {
    sharded: f"""NOT EXISTS (SELECT FROM blast_walks w
        WHERE {WALK_OF_ROOT.format(state="$6" if sharded else "kv.state_id")}
          AND (w.kept OR NOT $5))"""
    for sharded in (False, True)
}
# Keeps each root's walk: its size, each depth's (and with $5 its rows). Rows exist for a
# walk that had only counted: its key is taken over.
_KEEP_WALKS = """sized AS (
        SELECT root_id, state_id, serial,
               coalesce(sum(cardinality(ids)) FILTER (WHERE depth > 0), 0)::int AS total,
               coalesce(array_agg(cardinality(ids) ORDER BY depth) FILTER (WHERE depth > 0),
                        ARRAY[]::int[]) AS sizes
        FROM bfs GROUP BY root_id, state_id, serial),
    walks AS (
        INSERT INTO blast_walks AS w
            (state_id, serial, root_id, direction, edge_kind, total, sizes, kept)
        SELECT {state}, serial, root_id, $3, $4, total, sizes, $5 FROM sized
        ON CONFLICT (state_id, serial, root_id, direction, edge_kind) DO UPDATE
        SET total = EXCLUDED.total, sizes = EXCLUDED.sizes, kept = EXCLUDED.kept,
            created_at = EXCLUDED.created_at
        RETURNING w.id, w.state_id, w.serial, w.root_id)"""
_KEEP = f"""WITH RECURSIVE {{walk}}, {_KEEP_WALKS}
    INSERT INTO blast_walk_rows (state_id, walk_id, depth, address, resource_id, path)
    SELECT w.state_id, w.id, b.depth, x.address, x.id, x.path
    FROM walks w
    JOIN bfs b ON b.serial = w.serial AND b.root_id = w.root_id
    CROSS JOIN LATERAL unnest(b.ids, b.addresses, b.paths) AS x (id, address, path)
    WHERE b.depth > 0"""
_KEEP_COUNT = f"WITH RECURSIVE {{walk}}, {_KEEP_WALKS} SELECT count(*) FROM walks"

# Each root's kept walk (`total` NULL: none) and its page: at most $8 rows after ($6, $7)
# within depth $5 (NULL: all) in the walk's primary key order, one index range; `total`
# the members within $5, `beyond` those past it. A page row is at its root's version:
# the rows carry no version or state columns, and their JSONB ones only when asked for.
_PAGES = f"""
    SELECT k.ord AS page_owner, kv.serial, w.total - b.beyond AS total, b.beyond, w.kept,
           p.rn, p.depth, p.path, {ROW_COLUMNS}{{columns}}
    FROM {{keys}}
    LEFT JOIN blast_walks w ON {WALK_OF_ROOT.format(state="{at}")}
    LEFT JOIN LATERAL (SELECT coalesce(sum(l.size), 0)::int AS beyond
                       FROM unnest(w.sizes) WITH ORDINALITY AS l (size, depth)
                       WHERE l.depth > $5::int) b ON true
    LEFT JOIN LATERAL (
        SELECT q.*, row_number() OVER () AS rn
        FROM (SELECT x.resource_id AS id, x.state_id, k.version_id, x.depth, x.address, x.path
              FROM blast_walk_rows x
              WHERE x.state_id = {{walk}} AND x.walk_id = w.id AND w.kept
                AND (x.depth, x.address) > ($6, $7)
                AND x.depth <= coalesce($5::int, 2147483647)
              ORDER BY x.depth, x.address LIMIT $8) q
    ) p ON true
    {{row_join}}
    ORDER BY k.ord, p.rn"""
# By (json, attributes): the attributes come with JSON_COLUMNS (their sensitive paths).
_PAGES_OF = {
    (sharded, json, attributes): _PAGES.format(
        keys=keys_at_versions("$9") if sharded else KEYS_AT_VERSIONS,
        at="$9" if sharded else "kv.state_id",
        walk="$9" if sharded else "w.state_id",
        row_join=row_join("$9" if sharded else "p.state_id"),
        columns=(f", {json_columns('$9' if sharded else None)}" if json or attributes else "")
        + (", r.attributes" if attributes else ""),
    )
    for sharded in (False, True)
    for json in (False, True)
    for attributes in (False, True)
}
# Drops the walks past the limits that no one is walking (their lock free), with their
# rows: older than $1 seconds, or past $2 rows from the newest (but the newest).
_EXPIRE = f"""
    WITH held AS (
        SELECT w.*, sum(w.size) OVER (ORDER BY w.id DESC) AS upto
        FROM (SELECT w.*, CASE WHEN w.kept THEN w.total ELSE 0 END + 1 AS size
              FROM states s JOIN blast_walks w ON w.state_id = s.id) w),
    old AS (
        SELECT w.state_id, w.id FROM held w
        WHERE CASE WHEN w.created_at < now() - make_interval(secs => $1)
                        OR (w.upto > $2 AND w.upto > w.size)
              THEN pg_try_advisory_xact_lock({_WALK_LOCK}) ELSE false END),
    gone AS (DELETE FROM blast_walks w USING old
             WHERE w.state_id = old.state_id AND w.id = old.id)
    DELETE FROM blast_walk_rows x USING old
    WHERE x.state_id = old.state_id AND x.walk_id = old.id"""


def check_depth(max_depth: int | None) -> None:
    """A limit is a depth of 1 or more (None: none)."""
    if max_depth is not None and max_depth < 1:
        raise BadInput(f"maxDepth must be at least 1, got {max_depth}")


async def blast_radius(
    conn: asyncpg.Connection,
    roots: list[ResourceKey],
    direction: Direction = Direction.DEPENDENTS,
    *,
    limits: WalkLimits,
    max_depth: int | None = None,
    first: int,
    after: tuple[int, int, str] | None = None,
    rows: bool = True,
    json: bool = True,
    attributes: bool = True,
) -> dict[ResourceKey, Page[asyncpg.Record]]:
    """Every resource reachable from each root at the root's version, once, at its
    shortest depth, with one shortest path (root first, itself last, encoded:
    path_addresses decodes it): by depth, then address. A root with nothing in reach
    has no page. With `max_depth` a page lists (and its total counts) the members within
    it; its `beyond` counts those deeper.

    `after` is a BLAST_KEY (serial, depth, address): the serial of the version it was
    paged at, which must be the root's. `rows=False`: each radius' size only (its
    page's total; no rows). A row has ROW_COLUMNS (it is at its root's version), with
    `json` or `attributes` JSON_COLUMNS, and with `attributes` its attributes."""
    check_depth(max_depth)

    async def of_state(
        roots: list[ResourceKey], state: UUID | None
    ) -> dict[ResourceKey, Page[asyncpg.Record]]:
        return await _blast_radius(
            conn,
            roots,
            state,
            direction,
            limits=limits,
            max_depth=max_depth,
            first=first,
            after=after,
            rows=rows,
            json=json,
            attributes=attributes,
        )

    return await shards.per_state(conn, roots, lambda k: k[1], of_state)


async def _blast_radius(
    conn: asyncpg.Connection,
    roots: list[ResourceKey],
    state: UUID | None,
    direction: Direction,
    *,
    limits: WalkLimits,
    max_depth: int | None,
    first: int,
    after: tuple[int, int, str] | None,
    rows: bool,
    json: bool,
    attributes: bool,
) -> dict[ResourceKey, Page[asyncpg.Record]]:
    """blast_radius of `roots`: of one state (`state`, on Citus), or of any (None)."""
    depth, address = (after[1], after[2]) if after else (0, "")  # (0, ""): before depth 1
    key = (*key_arrays(roots), direction.value, DIRECT_EDGES)
    page = (max_depth, depth, address, first + 1 if rows else 0, *shards.pinned(state))
    pages = _PAGES_OF[state is not None, json, attributes]
    records = await conn.fetch(pages, *key, *page)
    unkept = _unkept(records, len(roots), rows=rows, serial=after and after[0])
    if unkept:
        walked = key_arrays([roots[ord - 1] for ord in unkept])
        async with conn.transaction():
            await conn.execute(
                _LOCK_ROOTS[state is not None], *walked, *key[2:], *shards.pinned(state)
            )
            if state is not None:
                walk = walk_sql(direction, state="$6", roots=_UNKEPT[True], paths=rows)
                key_of = (direction.value, DIRECT_EDGES)
                await walk_steps.keep_walked(conn, walk, key_of, walked, state, rows)
            else:
                keep = (_KEEP if rows else _KEEP_COUNT).format(
                    walk=walk_sql(direction, state=None, roots=_UNKEPT[False], paths=rows),
                    state="state_id",
                )
                await conn.execute(keep, *walked, *key[2:], rows)
            records = await conn.fetch(pages, *key, *page)
            if state is None or walk_steps.expiry_due():
                await conn.execute(_EXPIRE, limits.seconds, limits.rows)
    counted = [r for r in records if r["total"]]  # an empty radius: no page
    return by_key(with_beyond(pages_by_owner(counted, first, BLAST_KEY), counted), roots)


def with_beyond(pages: dict[Any, Page[R]], records: Iterable[Any]) -> dict[Any, Page[R]]:
    """`pages` with the count of members past the depth limit, from their records'
    `beyond` column (any row of an owner's: it is the owner's)."""
    beyond = {r["page_owner"]: r["beyond"] for r in records}
    return {
        owner: replace(page, beyond=beyond[owner]) if beyond[owner] else page
        for owner, page in pages.items()
    }


def _unkept(
    records: list[asyncpg.Record], roots: int, *, rows: bool, serial: int | None
) -> list[int]:
    """The roots (1-based) whose walk is not kept (or with `rows`, only counted); a cursor
    of another version than its root's is refused."""
    found = {record["page_owner"]: record for record in records}
    for record in found.values():
        if serial is not None:
            check_cursor_serial(serial, record["serial"])
    return [
        ord
        for ord in range(1, roots + 1)
        if (r := found.get(ord)) is None or r["total"] is None or (rows and not r["kept"])
    ]


def path_addresses(path: str) -> list[str]:
    """A page row's path, as the walk encodes it, back to its list of addresses."""
    addresses = path.split("\x01\x01")
    if "\x01\x02" not in path:  # no address of it holds \x01: nothing escaped (the usual)
        return addresses
    return [address.replace("\x01\x02", "\x01") for address in addresses]


def check_cursor_serial(cursor: int, serial: int) -> None:
    """A blast radius cursor pages the version of the root it was taken at."""
    if cursor != serial:
        raise BadInput(
            f"the cursor pages the blast radius at serial {cursor}, "
            f"this resource is at serial {serial}: start again without it"
        )


async def forget_walks(
    conn: asyncpg.Connection, state_id: UUID, serials: list[int] | None = None
) -> None:
    """Drops the kept walks of a state (deleted), or of its versions at `serials` (pruned):
    no one can page them any more."""
    await conn.execute(
        """WITH walks AS (DELETE FROM blast_walks
                          WHERE state_id = $1 AND ($2::bigint[] IS NULL OR serial = ANY($2))
                          RETURNING id)
           DELETE FROM blast_walk_rows
           WHERE state_id = $1 AND walk_id IN (SELECT id FROM walks)""",
        state_id,
        serials,
    )
