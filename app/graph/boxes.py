"""The radius picture at scale: a kept blast radius (app/graph/edges.py) by depth and
box, and the edges between boxes of neighbouring depths counted over every member."""

from collections.abc import Iterable
from dataclasses import dataclass
from uuid import UUID

import asyncpg

from app.graph import shards
from app.graph.edges import DIRECT_EDGES, HOP, WALK_OF_ROOT, Direction
from app.graph.hops import (
    configured_hop_sql,
    configured_spread_sql,
    configured_via_sql,
    instance_hop_sql,
    through_kind,
)
from app.graph.queries import valid_at
from app.graph.resources import KEYS_AT_VERSIONS, ResourceKey, key_arrays, keys_at_versions


@dataclass(frozen=True)
class RadiusBoxes:
    """A kept blast radius by depth and box, for a picture at scale. A box is a group
    (an address without its instance key, `module.m.aws_instance.web`) or, in a depth of
    at most `single_up_to` members or for an `expanded` group, one member (its address).
    `sizes`: (depth, box, members, the first member's address); `edges`: (the far box's
    depth, near box, far box, direct edges between their members, their reason where a
    configuration gives them all one: app/configuration/edges.py), the root being the box
    of its own address at depth 0."""

    sizes: list[tuple[int, str, int, str]]
    edges: list[tuple[int, str, str, int, str | None]]


# Postgres' regex: a final [...] (a count index or a for_each key) removed
_GROUP_OF = r"regexp_replace(x.address, '\[[^][]*\]$', '')"
# Boxes of the kept walk of ($1 root row id at $2 version, $3 and $4 its key) to depth $5
# (NULL: all), $6 the root's address, $7 single_up_to, $8 the expanded groups: their
# sizes, then the edges between boxes of neighbouring depths (over the whole walk: every
# member counts, drawn or not).
_BOXES = f"""
    WITH walk AS (
        SELECT w.id, w.state_id, w.serial, w.sizes,
            EXISTS (SELECT FROM configured_versions cv
                    WHERE cv.state_id = {{walk}} AND cv.serial = w.serial) AS configured
        FROM {{keys}}
        JOIN blast_walks w ON {WALK_OF_ROOT.format(state="{at}")} AND w.kept),
    member AS MATERIALIZED (
        SELECT x.resource_id AS id, x.depth, x.address,
            CASE WHEN w.sizes[x.depth] <= $7 OR g.grp = ANY($8::text[])
                 THEN x.address ELSE g.grp END AS box
        FROM walk w
        JOIN blast_walk_rows x ON x.state_id = {{walk}} AND x.walk_id = w.id
        CROSS JOIN LATERAL (SELECT {_GROUP_OF} AS grp) g
        WHERE $5::int IS NULL OR x.depth <= $5
        UNION ALL
        SELECT k.id, 0, $6, $6 FROM unnest($1::uuid[]) AS k (id)),
    -- each member's depth and box by id: one lookup an edge, whatever the planner thinks
    -- of the sizes of the walk's rows (a fresh unlogged table has no statistics); read as
    -- a scalar subquery (an InitPlan, one value for the statement), never a CTE scan per
    -- member, which copies the whole object each time
    placed AS MATERIALIZED (SELECT jsonb_object_agg(id::text, jsonb_build_array(depth, box)) AS of
               FROM member),
    -- the members' edges to a resource of several instances (one row each; in a
    -- configured version, its copy's rows, with their reasons): that resource's
    -- instances are counted by place once (spread), not once for every member that
    -- depends on it
    via AS MATERIALIZED (
        SELECT f.depth, f.box, d.{{back_far}} AS resource, NULL::text AS reason
        FROM walk w CROSS JOIN member f
        JOIN resource_dependencies d ON d.{{back_near}} = f.id AND d.kind = '{{through}}'
            AND d.direct AND {valid_at("d", "{walk}", "w.serial")}
        WHERE f.depth > 0 AND NOT w.configured
        UNION ALL
        SELECT f.depth, f.box, t.resource, t.reason
        FROM walk w CROSS JOIN member f CROSS JOIN LATERAL {{configured_via}} t
        WHERE f.depth > 0 AND w.configured AND t.direct),
    spread AS MATERIALIZED (
        SELECT r.resource, (SELECT of FROM placed) -> e.{{back_far}}::text AS near,
            NULL::text AS reason, count(*) AS n
        FROM (SELECT DISTINCT resource FROM via) r CROSS JOIN walk w
        JOIN resource_dependencies e ON e.{{back_near}} = r.resource
            AND e.direct AND {valid_at("e", "{walk}", "w.serial")}
        WHERE NOT w.configured
        GROUP BY 1, 2
        UNION ALL
        SELECT r.resource, (SELECT of FROM placed) -> t.id::text, t.reason, count(*)
        FROM (SELECT DISTINCT resource FROM via) r CROSS JOIN walk w
        CROSS JOIN LATERAL {{configured_spread}} t
        WHERE w.configured AND t.direct
        GROUP BY 1, 2, 3),
    -- per member, its other edges in by the near one's place (a few rows, not one an
    -- edge): the references' direct edges where the version has a configuration, else the
    -- reduction's; a bundle's reason when all its edges share one
    edge AS (
        SELECT f.depth, f.box, e.near, e.n, e.reasoned, e.low, e.high
        FROM walk w CROSS JOIN member f
        CROSS JOIN LATERAL (
            SELECT (SELECT of FROM placed) -> d.near_id::text AS near, count(*) AS n,
                count(d.reason) AS reasoned, min(d.reason) AS low, max(d.reason) AS high
            FROM (SELECT h.id AS near_id, NULL::text AS reason FROM ({{back}}) h
                UNION ALL
                  SELECT c.id, c.reason FROM {{configured}} c WHERE c.direct) d
            GROUP BY 1) e
        WHERE f.depth > 0
        UNION ALL
        SELECT v.depth, v.box, s.near, s.n, CASE WHEN r.reason IS NULL THEN 0 ELSE s.n END,
            r.reason, r.reason
        FROM via v JOIN spread s ON s.resource = v.resource
        CROSS JOIN LATERAL (SELECT coalesce(v.reason, s.reason) AS reason) r),
    pair AS (
        SELECT depth, box, near, sum(n) AS n,
            CASE WHEN min(low) = max(high) AND sum(reasoned) = sum(n) THEN min(low) END AS reason
        FROM edge WHERE (near ->> 0)::int = depth - 1
        GROUP BY depth, box, near)
    SELECT depth::int, box, NULL AS far, count(*)::int AS n, min(address) AS address,
        NULL::text AS reason
    FROM member WHERE depth > 0 GROUP BY depth, box
    UNION ALL
    SELECT depth::int, near ->> 1, box, n::int, NULL, reason FROM pair"""


async def radius_boxes(
    conn: asyncpg.Connection,
    root: ResourceKey,
    root_address: str,
    direction: Direction = Direction.DEPENDENTS,
    *,
    max_depth: int | None = None,
    single_up_to: int,
    expanded: Iterable[str] = (),
) -> RadiusBoxes:
    """The boxes of `root`'s kept radius (walk it first: `blast_radius`) and the
    bundled edges between them; nothing when it has no kept walk."""
    near, far = HOP[direction]
    state: list[UUID] = []  # on Citus, the root's state: the statement names it
    if shards.sharded(conn):
        states = await shards.states_of(conn, [root[1]])
        if root[1] not in states:
            return RadiusBoxes([], [])
        state = [states[root[1]]]
    walk = "$9" if state else "w.state_id"
    back = instance_hop_sql(
        far, near, at="f.id", state=walk, serial="w.serial", direct="{e}.direct",
        gate="NOT w.configured",
    )  # fmt: skip
    configured = configured_hop_sql(
        far, near, at="f.id", state=walk, serial="w.serial", gate="w.configured", through=False
    )
    sql = _BOXES.format(
        configured=configured,
        configured_via=configured_via_sql(far, at="f.id", state=walk, serial="w.serial"),
        configured_spread=configured_spread_sql(
            far, resource="r.resource", state=walk, serial="w.serial"
        ),
        back=back,
        back_near=far,
        back_far=near,
        through=through_kind(far),
        keys=keys_at_versions("$9") if state else KEYS_AT_VERSIONS,
        at="$9" if state else "kv.state_id",
        walk=walk,
    )
    key = (*key_arrays([root]), direction.value, DIRECT_EDGES)
    found = await conn.fetch(
        sql, *key, max_depth, root_address, single_up_to, list(expanded), *state
    )
    sizes = [(r["depth"], r["box"], r["n"], r["address"]) for r in found if r["far"] is None]
    edges = [
        (r["depth"], r["box"], r["far"], r["n"], r["reason"]) for r in found if r["far"] is not None
    ]
    return RadiusBoxes(sizes, edges)
