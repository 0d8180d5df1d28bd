"""The edges of a configured version (migration 0029): which dependency edges are
direct when the configuration is known, and why each edge is there.

A version of a state with a configuration gets, at its write (or when a configuration
is recorded for the state's current version), a copy of its direct edges in
configured_edges: a declared edge is direct when a reference of the configuration
explains it (matched by the addresses of both ends without instance keys: `explicit`
for depends_on, `implicit` with the arguments that hold it) or when the transitive
reduction kept it (resource_dependencies.direct; `declared` when no reference explains
it). The references give the real first hops (a resource reading both a VPC and its
subnet is one hop from each), and the reduction's edges keep every declared member
reachable where the configuration does not say (a reference through a local value, a
stale configuration). The other declared edges are not copied: they are `declared`
and not direct. The copy is at the grain the edges are stored (migration 0031): an
edge to a resource of several instances is one row for all its instances, expanded on
read (app/graph/hops.py configured_hop_sql). The blast radius of a configured version
walks the copy (app/graph/edges.py)."""

from uuid import UUID

import asyncpg

from app.graph import shards
from app.graph.hops import configured_hop_sql, hop_sql
from app.graph.queries import valid_at
from app.graph.resources import KEYS_AT_VERSIONS, ResourceKey, key_arrays, keys_at_versions

EXPLICIT, IMPLICIT, DECLARED = "explicit", "implicit", "declared"

# The version ($1 state, $2 serial) marked with the state's configuration (none: the
# state has none, and nothing follows).
_MARK = """
    INSERT INTO configured_versions (state_id, serial, configuration_id)
    SELECT sc.state_id, $2, sc.configuration_id FROM state_configurations sc
    WHERE sc.state_id = $1
    RETURNING configuration_id"""
# Then its declared edges copied with their reasons, those of the configuration $3 (of the
# same state: each statement names the state, one shard on Citus), at the grain they are
# stored (migration 0031): an `instance` row as it is, a `resource` row once for all its
# members (a reference matches config addresses, which its members share); the `member`
# rows stay in resource_dependencies (app/graph/hops.py configured_hop_sql reads both).
# A pair both referenced and in depends_on is implicit (the reference is what the value
# needs).
_CONFIGURE = f"""
    INSERT INTO configured_edges
        (state_id, serial, from_resource_id, to_resource_id, kind, reason, attributes, direct)
    SELECT $1, $2, d.from_resource_id, d.to_resource_id, d.kind,
           coalesce(x.reason, '{DECLARED}'), coalesce(x.attributes, '{{}}'),
           d.direct OR x.reason IS NOT NULL
    FROM resource_dependencies d
    -- each end's address without instance keys, by index probes (whatever the planner
    -- thinks of the version's size): a resource of several instances has a member's
    CROSS JOIN LATERAL (
        SELECT config_address(r.address) AS address FROM resources r
        WHERE r.state_id = $1 AND r.id = d.from_resource_id) f
    CROSS JOIN LATERAL (
        (SELECT config_address(r.address) AS address FROM resources r
         WHERE d.kind = 'instance' AND r.state_id = $1 AND r.id = d.to_resource_id)
      UNION ALL
        (SELECT config_address(r.address) FROM resource_dependencies m
         JOIN resources r ON r.state_id = m.state_id AND r.id = m.to_resource_id
         WHERE d.kind = 'resource' AND m.state_id = $1 AND m.from_resource_id = d.to_resource_id
           AND m.kind = 'member' AND {valid_at("m")}
         LIMIT 1)) t
    -- a pair both referenced and in depends_on is implicit (what the value needs), and
    -- 'implicit' sorts after 'explicit'
    LEFT JOIN LATERAL (
        SELECT x.reason, x.attributes FROM configuration_references x
        WHERE x.state_id = $1 AND x.configuration_id = $3
          AND x.source = f.address AND x.target = t.address
        ORDER BY x.reason DESC LIMIT 1) x ON true
    WHERE d.kind <> 'member' AND {valid_at("d")} AND (d.direct OR x.reason IS NOT NULL)"""


async def configure_version(
    conn: asyncpg.Connection, state_id: UUID, serial: int, *, replace: bool = False
) -> None:
    """Copies the declared edges of the version at `serial` with their reasons, when the
    state has a configuration (else nothing); `replace`: those it had are dropped first
    (a new configuration for the version)."""
    if replace:
        await conn.execute(
            "DELETE FROM configured_versions WHERE state_id = $1 AND serial = $2",
            state_id,
            serial,
        )
    configuration_id = await conn.fetchval(_MARK, state_id, serial)
    if configuration_id is not None:
        await conn.execute(_CONFIGURE, state_id, serial, configuration_id)


# Each resource ($1 row ids at $2 versions; of the state $4 on Citus) with its edges one
# way: the configured version's (with reasons) or, with no configuration, the declared
# ones. By address of the other end.
_EDGES = """
    SELECT k.ord AS owner, e.id, e.address, e.reason, e.attributes, e.direct
    FROM {keys}
    CROSS JOIN LATERAL (
        SELECT EXISTS (SELECT FROM configured_versions cv
                       WHERE cv.state_id = {state} AND cv.serial = kv.serial) AS on) cfg
    CROSS JOIN LATERAL (
        SELECT n.id, n.address COLLATE "C" AS address, e.reason, e.attributes, e.direct
        FROM (SELECT c.id, c.reason, c.attributes, c.direct FROM {configured} c
            UNION ALL
              -- the declared edges: all of them, or in a configured version those it
              -- did not copy (neither referenced nor kept by the reduction: not direct)
              SELECT d.id, '{declared}', '{{}}'::text[], d.direct AND NOT cfg.on
              FROM {hop} d
              WHERE NOT (cfg.on AND EXISTS (SELECT FROM {configured} c WHERE c.id = d.id))) e
        JOIN resources n ON n.id = e.id AND n.state_id = {state}
        ORDER BY 2 LIMIT $3) e
    ORDER BY k.ord, e.address"""


async def reasoned_edges(
    conn: asyncpg.Connection, keys: list[ResourceKey], *, referenced_by: bool, limit: int
) -> dict[ResourceKey, list[asyncpg.Record]]:
    """Each resource's dependency edges (what it references) or, with `referenced_by`,
    its dependents' edges to it: the other end (`id`, `address`), `reason`,
    `attributes`, `direct`. At most `limit` each, by address."""
    near, far = (
        ("to_resource_id", "from_resource_id")
        if referenced_by
        else ("from_resource_id", "to_resource_id")
    )

    async def of_state(
        keys: list[ResourceKey], state: UUID | None
    ) -> dict[ResourceKey, list[asyncpg.Record]]:
        at = shards.pin(state, "$4", "kv.state_id")
        sql = _EDGES.format(
            keys=keys_at_versions("$4") if state else KEYS_AT_VERSIONS,
            near=near,
            far=far,
            declared=DECLARED,
            hop=hop_sql(near, far, at="k.id", state=at, serial="kv.serial"),
            configured=configured_hop_sql(
                near, far, at="k.id", state=at, serial="kv.serial", gate="cfg.on"
            ),
            state=at,
        )
        records = await conn.fetch(sql, *key_arrays(keys), limit, *shards.pinned(state))
        found: dict[ResourceKey, list[asyncpg.Record]] = {k: [] for k in keys}
        for r in records:
            found[keys[r["owner"] - 1]].append(r)
        return found

    # a statement per state (app/graph/shards.py)
    return await shards.per_state(conn, keys, lambda k: k[1], of_state)
