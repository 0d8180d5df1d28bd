"""The walk across states on Citus, a state at a time (app/graph/across_steps.py pages
it): one recursive statement per state (and version) on its shard walks everything
reachable within it, breadth first from where the walk entered it; steps are taken only
at the states' boundaries.

A state's version is entered at its resources (each at a depth, with a path): the walk's
roots, or the data sources and output sources reached from other states. Its statement
walks from them level by level, as the single node's statement does (a resource entered
once, at its shortest depth, with the smallest of its shortest paths), and gives what
leads out of it (DEPENDENTS: the outputs derived from what it reached; DEPENDENCIES: the
links its data sources read). The links across are then found for every state walked
in a round at once: one statement for the consumers of all the outputs, one for the
producers' output sources. A state entered again at a shorter depth (or as deep by a
smaller path) is walked again from all its entries; the walk ends when
no state improves: each resource then has its shortest depth and the smallest of its
shortest paths, as breadth first.

A resource is one node whatever version it is read at; breadth first reads its hops at
the smallest serial of those that reached it. When a resource is reached in two versions
of its state (a walk from an old version that comes back to the current one), the walk
in states cannot say which: `walk_states` answers None and the caller walks a level at a
time.
"""

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import asyncpg

from app.graph.edges import Direction
from app.graph.hops import DEPENDENCIES_HOP, DEPENDENTS_HOP, configured_hop_sql, hop_sql
from app.graph.queries import valid_at

SEP, ADDRESS = "\x01\x01", "\x01\x02"


def escaped(text: str) -> str:
    return text.replace("\x01", "\x01\x03")


def step(state: str, address: str) -> str:
    """A resource's step of a path: its state and address."""
    return escaped(state) + ADDRESS + escaped(address)


def _hop(direction: Direction) -> str:
    near, far = DEPENDENTS_HOP if direction is Direction.DEPENDENTS else DEPENDENCIES_HOP
    declared = hop_sql(
        near, far, at="f.id", state="$1", serial="$2", direct="{e}.direct", gate="NOT cfg.on"
    )
    configured = configured_hop_sql(near, far, at="f.id", state="$1", serial="$2", gate="cfg.on")
    return f"""SELECT d.id, f.path, f.id AS src FROM cfg,
            unnest(b.ids, b.paths) AS f (id, path)
            CROSS JOIN LATERAL (SELECT h.id FROM {declared} h
                              UNION ALL
                                SELECT c.id FROM {configured} c WHERE c.direct
                                OFFSET 0) d"""


# State $1 at serial $2, entered at $3 (ids) at depths $4 with paths $5: a level per depth
# (the entries of a depth join the level's hops); those of depth 0 (the roots) are seen
# from the start when $6, and $9 (the roots of other versions). $7: the state's step
# before an address; $8: keep every hop.
_WALK = r"""WITH RECURSIVE
    cfg AS (SELECT EXISTS (SELECT FROM configured_versions cv
                           WHERE cv.state_id = $1 AND cv.serial = $2) AS on),
    e AS (SELECT * FROM unnest($3::uuid[], $4::int[], $5::text[]) AS e (id, depth, path)),
    bfs (depth, ids, paths, addresses, seen, srcs, dsts) AS (
        SELECT s.depth, s.ids, s.paths, s.addresses,
               CASE WHEN s.depth > 0 OR $6 THEN s.ids ELSE '{}' END || $9::uuid[],
               '{}'::uuid[], '{}'::uuid[]
        FROM (SELECT min(e.depth) AS depth FROM e) m CROSS JOIN LATERAL (
            SELECT m.depth, array_agg(e.id) AS ids, array_agg(e.path COLLATE "C") AS paths,
                   array_agg(r.address) AS addresses
            FROM e JOIN resources r ON r.state_id = $1 AND r.id = e.id
            WHERE e.depth = m.depth) s
      UNION ALL
        SELECT b.depth + 1, coalesce(n.ids, '{}'), coalesce(n.paths, '{}'),
               coalesce(n.addresses, '{}'), b.seen || coalesce(n.ids, '{}'),
               coalesce(n.srcs, '{}'), coalesce(n.dsts, '{}')
        FROM bfs b CROSS JOIN LATERAL (
            WITH h AS MATERIALIZED ({hop})
            SELECT m.*, x.* FROM (
                SELECT array_agg(c.id) AS ids, array_agg(c.path) AS paths,
                       array_agg(r.address) AS addresses
                FROM (SELECT c.id, min(c.path COLLATE "C") AS path
                      FROM (SELECT h.id, h.path || E'\x01\x01' || $7
                                   || replace(r.address, E'\x01', E'\x01\x03') AS path
                            FROM h JOIN resources r ON r.state_id = $1 AND r.id = h.id
                          UNION ALL
                            SELECT e.id, e.path FROM e WHERE e.depth = b.depth + 1) c
                      WHERE NOT EXISTS (SELECT FROM unnest(b.seen) AS seen (id)
                                        WHERE seen.id = c.id)
                      GROUP BY c.id) c
                JOIN resources r ON r.state_id = $1 AND r.id = c.id) m
            CROSS JOIN (SELECT array_agg(h.src) AS srcs, array_agg(h.id) AS dsts
                        FROM h WHERE $8) x
        ) n
        WHERE cardinality(b.ids) > 0 OR b.depth < (SELECT max(e.depth) FROM e)
    ),
    got AS (SELECT x.id, b.depth, x.path, x.address FROM bfs b
            CROSS JOIN LATERAL unnest(b.ids, b.paths, b.addresses) AS x (id, path, address))
    SELECT 'n' AS kind, g.id, g.depth, g.path, g.address, NULL::uuid AS dst,
           NULL::jsonb AS outputs FROM got g
  UNION ALL
    SELECT 'h', x.src, NULL, NULL, NULL, x.dst, NULL FROM bfs b
    CROSS JOIN LATERAL unnest(b.srcs, b.dsts) AS x (src, dst)
  UNION ALL
    {out}"""
# what leads out: DEPENDENTS, the outputs derived from what was reached (the output's
# name in the address column); DEPENDENCIES, the links its data sources read (the
# producer's name there, the outputs read in `outputs`)
_OUT = {
    Direction.DEPENDENTS: f"""SELECT 'o', x.resource_id, NULL, NULL, x.output_name, NULL, NULL
        FROM output_lineage x
        WHERE x.resource_id IN (SELECT id FROM got) AND {valid_at("x", "$1", "$2")}""",
    Direction.DEPENDENCIES: f"""SELECT 'o', l.resource_id, NULL, NULL, l.producer_name, NULL,
               l.outputs
        FROM state_links l
        WHERE l.resource_id IN (SELECT id FROM got) AND {valid_at("l", "$1", "$2")}""",
}
WALK_SQL = {d: _WALK.replace("{hop}", _hop(d)).replace("{out}", _OUT[d]) for d in Direction}
# The consumers (current versions, readable: $3) reading outputs $2 of producers $1: their
# data sources, on every shard.
_CONSUMERS = """
    SELECT p.producer, p.output, l.state_id, c.name AS state_name,
           c.current_serial AS serial, l.resource_id, r.address
    FROM unnest($1::text[], $2::text[]) AS p (producer, output)
    JOIN state_links l ON l.producer_name = p.producer AND l.serial_to IS NULL
                      AND l.outputs ? p.output
    JOIN states c ON c.id = l.state_id AND may_read(c.name, $3::text[])
    JOIN resources r ON r.id = l.resource_id AND r.state_id = l.state_id"""
# The current output sources of producers $1 (readable: $2), on their shards.
_SOURCES = """
    SELECT p.name AS state_name, p.id AS state_id, p.current_serial AS serial,
           x.output_name, x.resource_id, r.address
    FROM states p
    JOIN output_lineage x ON x.state_id = p.id AND x.serial_to IS NULL
    JOIN resources r ON r.id = x.resource_id AND r.state_id = x.state_id
    WHERE p.name = ANY($1::text[]) AND may_read(p.name, $2::text[])
      AND p.current_serial IS NOT NULL"""

Label = tuple[int, str]  # depth, path


@dataclass(eq=False)
class Unit:
    """A state's version in a walk: where it was entered, and what its walk reached."""

    state_id: UUID
    serial: int
    name: str
    roots: dict[UUID, tuple[str, str]] = field(default_factory=dict)  # id -> path, address
    entries: dict[UUID, tuple[int, str, str]] = field(default_factory=dict)  # depth, path, ...
    members: dict[UUID, tuple[int, str, str]] = field(default_factory=dict)  # ... address
    hops: list[tuple[UUID, UUID]] = field(default_factory=list)
    out: list[tuple[UUID, str, Any]] = field(default_factory=list)  # from, name, outputs

    def label(self, row_id: UUID) -> Label | None:
        """The shortest (depth, path) the unit holds for a resource, roots first."""
        if row_id in self.roots:
            return 0, self.roots[row_id][0]
        found = self.members.get(row_id)
        return (found[0], found[1]) if found else None


@dataclass
class Walked:
    """A walk in states: its units by (state id, serial), each resource's unit."""

    units: dict[tuple[UUID, int], Unit]
    where: dict[UUID, Unit]  # member id -> its unit
    crossed: set[tuple[UUID, UUID]]  # the hops between states

    def hops(self) -> list[tuple[UUID, UUID]]:
        """Every hop taken (with `hops`): within the states, then between them."""
        return [hop for unit in self.units.values() for hop in unit.hops] + sorted(self.crossed)


def _has(outputs: Any, name: str) -> bool:
    """jsonb `outputs ? name`."""
    if isinstance(outputs, dict | list):
        return name in outputs
    return bool(outputs == name)


async def _walk_unit(
    conn: asyncpg.Connection,
    unit: Unit,
    direction: Direction,
    *,
    roots_seen: bool,
    hops: bool,
    seen: list[UUID],
) -> None:
    """The unit's statement: its members, hops and what leads out, anew; `seen`: the
    resources it does not enter (the walk's roots, when seen)."""
    entries = [(i, 0, path) for i, (path, _) in unit.roots.items()]
    entries += [(i, depth, path) for i, (depth, path, _) in unit.entries.items()]
    records = await conn.fetch(
        WALK_SQL[direction],
        unit.state_id,
        unit.serial,
        [e[0] for e in entries],
        [e[1] for e in entries],
        [e[2] for e in entries],
        roots_seen,
        escaped(unit.name) + ADDRESS,
        hops,
        seen,
    )
    unit.members, unit.hops, unit.out = {}, [], []
    for r in records:
        kind = r["kind"]
        if kind == "n":
            if r["depth"] > 0:
                unit.members[r["id"]] = (r["depth"], r["path"], r["address"])
        elif kind == "h":
            unit.hops.append((r["id"], r["dst"]))
        else:
            unit.out.append((r["id"], r["address"], r["outputs"]))


# a hop out of a state: the resource entered (id, state id, serial, state name, address),
# its depth and the path to the resource it was entered from
Out = tuple[UUID, UUID, int, str, str, int, str]


async def _out_of(
    conn: asyncpg.Connection,
    walked: list[Unit],
    direction: Direction,
    readable: list[str] | None,
    crossed: set[tuple[UUID, UUID]],
) -> list[Out]:
    """The hops out of the states just walked, in one statement (their hops added to
    `crossed`)."""
    reached: list[Out] = []
    if direction is Direction.DEPENDENTS:
        wanted: dict[tuple[str, str], list[Label]] = {}
        froms: dict[tuple[str, str], list[UUID]] = {}
        for unit in walked:
            for source, output, _ in unit.out:
                label = unit.label(source)
                if label is not None:
                    wanted.setdefault((unit.name, output), []).append(label)
                    froms.setdefault((unit.name, output), []).append(source)
        if wanted:
            pairs = sorted(wanted)
            for c in await conn.fetch(
                _CONSUMERS, [p for p, _ in pairs], [o for _, o in pairs], readable
            ):
                key = (c["producer"], c["output"])
                for depth, path in wanted[key]:
                    reached.append(
                        (c["resource_id"], c["state_id"], c["serial"], c["state_name"],
                         c["address"], depth + 1, path)
                    )  # fmt: skip
                crossed.update((source, c["resource_id"]) for source in froms[key])
    else:
        reads: list[tuple[Label, UUID, str, Any]] = []
        for unit in walked:
            for source, producer, outputs in unit.out:
                label = unit.label(source)
                if label is not None:
                    reads.append((label, source, producer, outputs))
        if reads:
            sources: dict[str, list[asyncpg.Record]] = {}
            for x in await conn.fetch(
                _SOURCES, sorted({producer for _, _, producer, _ in reads}), readable
            ):
                sources.setdefault(x["state_name"], []).append(x)
            for (depth, path), source, producer, outputs in reads:
                for x in sources.get(producer, ()):
                    if _has(outputs, x["output_name"]):
                        reached.append(
                            (x["resource_id"], x["state_id"], x["serial"], producer,
                             x["address"], depth + 1, path)
                        )  # fmt: skip
                        crossed.add((source, x["resource_id"]))
    return reached


async def walk_states(
    conn: asyncpg.Connection,
    roots: list[tuple[UUID, int, str, UUID, str]],
    direction: Direction,
    readable: list[str] | None,
    *,
    roots_seen: bool,
    hops: bool = False,
    across: bool = True,
) -> Walked | None:
    """Every resource reachable from `roots` (state id, serial, state name, row id,
    address: of one version), each at its shortest depth; the roots are seen from the
    start with `roots_seen` (else entered too when reached); with `hops`, every hop
    taken, as the single node's reach keeps them; without `across`, within the roots'
    state only. None: a resource reached in two versions of its state (see the module's
    doc)."""
    units: dict[tuple[UUID, int], Unit] = {}
    for state_id, serial, name, row_id, address in roots:
        unit = units.setdefault((state_id, serial), Unit(state_id, serial, name))
        unit.roots[row_id] = (step(name, address), address)
    root_ids = {r[3] for r in roots}
    seen = sorted(root_ids) if roots_seen else []  # entered in no version
    dirty = list(units.values())
    crossed: set[tuple[UUID, UUID]] = set()  # hops between states
    while dirty:
        for unit in dirty:
            await _walk_unit(conn, unit, direction, roots_seen=roots_seen, hops=hops, seen=seen)
        walked, dirty = (dirty if across else []), []
        reached = await _out_of(conn, walked, direction, readable, crossed)
        for row_id, state_id, serial, name, address, depth, parent in reached:
            if roots_seen and row_id in root_ids:
                continue
            unit = units.setdefault((state_id, serial), Unit(state_id, serial, name))
            path = parent + SEP + step(name, address)
            held = unit.entries.get(row_id)
            member = unit.members.get(row_id)
            best = min((x[:2] for x in (held, member) if x is not None), default=None)
            if best is None or (depth, path) < best:
                unit.entries[row_id] = (depth, path, address)
                if unit not in dirty:
                    dirty.append(unit)
    where: dict[UUID, Unit] = {}
    for unit in units.values():
        for row_id in unit.members:
            if where.setdefault(row_id, unit) is not unit:
                return None
    return Walked(units, where, crossed)
