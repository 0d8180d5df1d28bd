"""The blast radius across states on Citus, in steps (app/graph/across.py walks it in one
recursive statement, which Citus runs only within one state), and a plan's impact
(across.reach).

The walk goes a state at a time (app/graph/across_closure.py: a statement per state
entered walks all it reaches within it). When it reaches a resource in two versions of its
state, the server walks breadth first a level at a time instead, as the single node's
statement does: for each state (and version) of the level, one statement on the state's
shard gives the next resources within it (its direct edges) and what leads out of it
(DEPENDENTS: the outputs derived from the level's resources; DEPENDENCIES: the links its
data sources read); the links to those outputs are found on every shard (by producer
name, one index probe each), the producers' output sources on the producer's shard.
Either way each resource is entered once, at its shortest depth, with the smallest of its
shortest paths (as lists of (state, address)); the page, its total and `beyond` are those
of the statement, and the page's rows are read on their states' shards.
"""

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from app.graph import shards
from app.graph.across_closure import SEP, step, walk_states
from app.graph.edges import Direction, check_cursor_serial
from app.graph.hops import configured_hop_sql, hop_sql
from app.graph.queries import valid_at
from app.graph.resources import ResourceKey, resource_columns

# The within hops of ($3 ids) of state $1 at serial $2, with their addresses; and what
# leads out: DEPENDENTS, the outputs derived from them; DEPENDENCIES, the links they read.
_WITHIN = """
    WITH cfg AS (SELECT EXISTS (SELECT FROM configured_versions cv
                                WHERE cv.state_id = $1 AND cv.serial = $2) AS on),
    hop AS (
        SELECT h.id, f.id AS src
        FROM cfg CROSS JOIN unnest($3::uuid[]) AS f (id) CROSS JOIN LATERAL {hop} h
      UNION ALL
        SELECT c.id, f.id
        FROM cfg CROSS JOIN unnest($3::uuid[]) AS f (id) CROSS JOIN LATERAL {configured} c
        WHERE c.direct)
    SELECT h.id, h.src, r.address, NULL::text AS output, NULL::jsonb AS outputs
    FROM hop h JOIN resources r ON r.id = h.id AND r.state_id = $1
    UNION ALL
    {out}"""
_OUT = {
    Direction.DEPENDENTS: f"""SELECT NULL, x.resource_id, NULL, x.output_name, NULL
        FROM output_lineage x
        WHERE x.resource_id = ANY($3::uuid[]) AND {valid_at("x", "$1", "$2")}""",
    # (the producer's name in the address column)
    Direction.DEPENDENCIES: f"""SELECT NULL, l.resource_id, l.producer_name, NULL, l.outputs
        FROM state_links l
        WHERE l.resource_id = ANY($3::uuid[]) AND {valid_at("l", "$1", "$2")}""",
}
_NEAR_FAR = {
    Direction.DEPENDENTS: ("to_resource_id", "from_resource_id"),
    Direction.DEPENDENCIES: ("from_resource_id", "to_resource_id"),
}
_WITHIN_SQL = {
    d: _WITHIN.format(
        near=_NEAR_FAR[d][0],
        far=_NEAR_FAR[d][1],
        hop=hop_sql(
            _NEAR_FAR[d][0],
            _NEAR_FAR[d][1],
            at="f.id",
            state="$1",
            serial="$2",
            direct="{e}.direct",
            gate="NOT cfg.on",
        ),
        configured=configured_hop_sql(
            _NEAR_FAR[d][0], _NEAR_FAR[d][1], at="f.id", state="$1", serial="$2", gate="cfg.on"
        ),
        out=_OUT[d],
    )
    for d in Direction
}
# The consumers (current versions) reading outputs $2 of producer $1, readable ($3): their
# data sources, on every shard.
_CONSUMERS = """
    SELECT l.state_id, c.name AS state_name, c.current_serial AS serial, l.resource_id,
           r.address, n.name AS output
    FROM state_links l
    JOIN states c ON c.id = l.state_id AND may_read(c.name, $3::text[])
    JOIN resources r ON r.id = l.resource_id AND r.state_id = l.state_id
    CROSS JOIN unnest($2::text[]) AS n (name)
    WHERE l.producer_name = $1 AND l.serial_to IS NULL AND l.outputs ? n.name"""
# A producer's current output sources, on its shard.
_SOURCES = """
    SELECT x.output_name, x.resource_id, r.address FROM output_lineage x
    JOIN resources r ON r.id = x.resource_id AND r.state_id = $1
    WHERE x.state_id = $1 AND x.serial_to IS NULL"""
# The page's rows at their versions, on their state's shard.
_ROWS = f"""
    SELECT {resource_columns("$1")}
    FROM unnest($2::uuid[], $3::bigint[]) AS k (id, serial)
    JOIN state_versions v ON v.state_id = $1 AND v.serial = k.serial
    JOIN states s ON s.id = v.state_id
    JOIN resources r ON r.id = k.id AND r.state_id = $1"""


@dataclass
class _Member:
    id: UUID
    state_id: UUID
    serial: int
    depth: int
    state_name: str
    address: str
    path: str


class _Level:
    """The next level of a walk: each resource reached (not seen before), with the
    smallest serial and parent path of the hops to it."""

    def __init__(self, seen: set[UUID], taken: list[tuple[UUID, UUID]] | None = None) -> None:
        self.seen = seen
        self.taken = taken  # every hop, when kept
        # id -> serial, parent path, state id, state name, address
        self.hops: dict[UUID, tuple[int, str, UUID, str, str]] = {}

    def reach(
        self,
        source: "_Member",
        row_id: UUID,
        state_id: UUID,
        serial: int,
        state_name: str,
        address: str,
    ) -> None:
        if self.taken is not None:
            self.taken.append((source.id, row_id))
        path = source.path
        if row_id in self.seen:
            return
        found = self.hops.get(row_id)
        if found is None:
            self.hops[row_id] = (serial, path, state_id, state_name, address)
        else:
            self.hops[row_id] = (min(found[0], serial), min(found[1], path), *found[2:])


def _has(outputs: Any, name: str) -> bool:
    """jsonb `outputs ? name`."""
    if isinstance(outputs, dict | list):
        return name in outputs
    return bool(outputs == name)


async def _walk(
    conn: asyncpg.Connection,
    roots: list[_Member],
    direction: Direction,
    readable: list[str] | None,
    *,
    roots_seen: bool = True,
    hops: list[tuple[UUID, UUID]] | None = None,
) -> list[_Member]:
    """Every resource reachable from `roots`, once, at its shortest depth; the roots are
    seen from the start with `roots_seen` (else entered too when reached). `hops`: every
    hop taken is added to it (those to resources already entered included)."""
    members: list[_Member] = []
    seen = {root.id for root in roots} if roots_seen else set()
    level = list(roots)
    depth = 0
    while level:
        depth += 1
        nxt = _Level(seen, hops)
        groups: dict[tuple[UUID, int], list[_Member]] = {}
        for member in level:
            groups.setdefault((member.state_id, member.serial), []).append(member)
        for (state_id, serial), of_version in groups.items():
            await _hops(conn, state_id, serial, of_version, direction, readable, nxt)
        level = []
        for row_id, (serial, path, state_id, state_name, address) in nxt.hops.items():
            seen.add(row_id)
            own = step(state_name, address)
            level.append(
                _Member(row_id, state_id, serial, depth, state_name, address, path + SEP + own)
            )
        members.extend(level)
    return members


async def _hops(
    conn: asyncpg.Connection,
    state_id: UUID,
    serial: int,
    members: list[_Member],
    direction: Direction,
    readable: list[str] | None,
    nxt: _Level,
) -> None:
    """The hops from `members` (of one state's version) into `nxt`."""
    by_id = {m.id: m for m in members}
    name = members[0].state_name
    records = await conn.fetch(_WITHIN_SQL[direction], state_id, serial, list(by_id))
    outputs: dict[str, list[_Member]] = {}
    for r in records:
        source = by_id[r["src"]]
        if r["id"] is not None:
            nxt.reach(source, r["id"], state_id, serial, name, r["address"])
        elif direction is Direction.DEPENDENTS:
            outputs.setdefault(r["output"], []).append(source)
        else:
            await _producers(conn, source, r["address"], r["outputs"], readable, nxt)
    if outputs:
        for c in await conn.fetch(_CONSUMERS, name, sorted(outputs), readable):
            for source in outputs[c["output"]]:
                nxt.reach(
                    source,
                    c["resource_id"],
                    c["state_id"],
                    c["serial"],
                    c["state_name"],
                    c["address"],
                )


async def _producers(
    conn: asyncpg.Connection,
    source: _Member,
    producer: str,
    outputs: Any,
    readable: list[str] | None,
    nxt: _Level,
) -> None:
    """DEPENDENCIES out of a data source: its producer's current output sources."""
    found = await conn.fetchrow(
        "SELECT id, current_serial FROM states WHERE name = $1 AND may_read(name, $2::text[])",
        producer,
        readable,
    )
    if found is None or found["current_serial"] is None:
        return
    for x in await conn.fetch(_SOURCES, found["id"]):
        if _has(outputs, x["output_name"]):
            nxt.reach(
                source,
                x["resource_id"],
                found["id"],
                found["current_serial"],
                producer,
                x["address"],
            )


async def walked_pages(
    conn: asyncpg.Connection,
    roots: list[ResourceKey],
    direction: Direction,
    *,
    max_depth: int | None,
    first: int,
    after: tuple[int, int, str, str] | None,
    rows: bool,
    readable: list[str] | None,
) -> list[dict[str, Any]]:
    """The rows cross_blast_radius reads from its statement: for each root (`page_owner`,
    1-based) with anything in reach, its page's rows (`rn`, RESOURCE_COLUMNS,
    `walk_serial`, `depth`, `encoded_path`, ...) or, past its last page, one row
    without (`rn` NULL); each with the root's `total` and `beyond`."""
    starts = await conn.fetch(
        """SELECT v.id AS version_id, v.state_id, v.serial, s.name
           FROM state_versions v JOIN states s ON s.id = v.state_id
           WHERE v.id = ANY($1::uuid[])""",
        list({version_id for _, version_id in roots}),
    )
    versions = {r["version_id"]: r for r in starts}
    found: list[dict[str, Any]] = []
    limit = max_depth if max_depth is not None else 2**31 - 1
    start = after[1:] if after else (0, "", "")
    for owner, (row_id, version_id) in enumerate(roots, start=1):
        version = versions.get(version_id)
        if version is None:
            continue
        address = await conn.fetchval(
            "SELECT address FROM resources WHERE state_id = $1 AND id = $2",
            version["state_id"],
            row_id,
        )
        if address is None:
            continue
        root = _Member(
            row_id,
            version["state_id"],
            version["serial"],
            0,
            version["name"],
            address,
            step(version["name"], address),
        )
        walked = await walk_states(
            conn,
            [(root.state_id, root.serial, root.state_name, root.id, root.address)],
            direction,
            readable,
            roots_seen=True,
        )
        if walked is None:  # reached in two versions of a state: a level at a time
            walk = await _walk(conn, [root], direction, readable)
        else:
            walk = [
                _Member(row_id, unit.state_id, unit.serial, depth, unit.name, address, path)
                for unit in walked.units.values()
                for row_id, (depth, path, address) in unit.members.items()
            ]
        within = [m for m in walk if m.depth <= limit]
        beyond = len(walk) - len(within)
        within.sort(key=lambda m: (m.depth, m.state_name, m.address))
        page = [m for m in within if (m.depth, m.state_name, m.address) > start]
        page = page[: first + 1] if rows else []
        if page and after is not None:
            check_cursor_serial(after[0], root.serial)
        columns = await _columns(conn, page)
        common = {"page_owner": owner, "total": len(within), "beyond": beyond}
        for rn, m in enumerate(page, start=1):
            found.append(
                {
                    **columns[m.state_id, m.id, m.serial],
                    **common,
                    "rn": rn,
                    "walk_serial": root.serial,
                    "depth": m.depth,
                    "state_name": m.state_name,
                    "address": m.address,
                    "encoded_path": m.path,
                }
            )
        if not page and within:
            found.append({**common, "rn": None})
    return found


async def _columns(
    conn: asyncpg.Connection, members: list[_Member]
) -> dict[tuple[UUID, UUID, int], dict[str, Any]]:
    """RESOURCE_COLUMNS of the members at their versions, a statement per state."""
    by_state: dict[UUID, list[_Member]] = {}
    for m in members:
        by_state.setdefault(m.state_id, []).append(m)
    columns: dict[tuple[UUID, UUID, int], dict[str, Any]] = {}
    for state_id, of_state in by_state.items():
        records = await conn.fetch(
            _ROWS, state_id, [m.id for m in of_state], [m.serial for m in of_state]
        )
        for r in records:
            columns[state_id, r["id"], r["serial"]] = dict(r)
    return columns


# The resources of version $2 (of state $1) at addresses $3.
_ROOTS = f"""SELECT r.id, r.address FROM resources r
    WHERE {valid_at("r", "$1", "$2")} AND r.address = ANY($3::text[])"""


async def reached(
    conn: asyncpg.Connection,
    version_id: UUID,
    addresses: list[str],
    readable: list[str] | None,
    *,
    across: bool,
) -> tuple[list[tuple[UUID, str]], dict[UUID, tuple[int, str]], list[tuple[UUID, UUID]]]:
    """across.reach on Citus (with `across`, across states; else within the roots'
    state): the roots (id, address), each resource reached (id -> depth, encoded path)
    and every hop taken."""
    state_id = (await shards.states_of(conn, [version_id])).get(version_id)
    if state_id is None:
        return [], {}, []
    version = await conn.fetchrow(
        """SELECT v.serial, s.name FROM state_versions v JOIN states s ON s.id = v.state_id
           WHERE v.state_id = $1 AND v.id = $2""",
        state_id,
        version_id,
    )
    if version is None:
        return [], {}, []
    serial, name = version["serial"], version["name"]
    found = await conn.fetch(_ROOTS, state_id, serial, addresses)
    roots = [(r["id"], r["address"]) for r in found]
    if not roots:
        return [], {}, []
    walked = await walk_states(
        conn,
        [(state_id, serial, name, row_id, address) for row_id, address in roots],
        Direction.DEPENDENTS,
        readable,
        roots_seen=False,
        hops=True,
        across=across,
    )
    if walked is not None:
        members = {
            row_id: (depth, path)
            for unit in walked.units.values()
            for row_id, (depth, path, _) in unit.members.items()
        }
        return roots, members, walked.hops()
    # reached in two versions of a state: a level at a time
    hops: list[tuple[UUID, UUID]] = []
    level = [
        _Member(row_id, state_id, serial, 0, name, address, step(name, address))
        for row_id, address in roots
    ]
    walk = await _walk(conn, level, Direction.DEPENDENTS, readable, roots_seen=False, hops=hops)
    return roots, {m.id: (m.depth, m.path) for m in walk}, hops
