"""One hop over the declared edges, instance to instance, in SQL: what every read of
resource_dependencies goes through (walks, neighbours, boxes, configured copies), and
every read of a configured version's copy of them, configured_edges (configured_hop_sql:
the copy is at the same grain, migration 0031).

Edges are stored at the grain they are declared (app/graph/write/edges.py): an edge to
a resource of several instances is one `resource` row, its instances its `member` rows.
A hop from an instance takes its `instance` edges as they are, and a `resource` edge
to each member of the resource at the version read, but the instance it stands on
(forwards); backwards, a `member` row leads to the resource's `resource` edges, whose
instances depend on this one. The flag of a hop through a resource is its `resource`
edge's (members are direct)."""

from app.graph.queries import valid_at

# (the edge column of the instance stood on, the column of the next one), by direction
# value; and the kind of row whose far end is a resource
DEPENDENTS_HOP = ("to_resource_id", "from_resource_id")
DEPENDENCIES_HOP = ("from_resource_id", "to_resource_id")
_THROUGH = {"to_resource_id": "member", "from_resource_id": "resource"}


def hop_sql(
    near: str,
    far: str,
    *,
    at: str,
    state: str,
    serial: str,
    direct: str = "true",
    gate: str = "true",
) -> str:
    """A subquery of the instances one declared edge from the instance `at` (an id
    expression) of state `state` at serial `serial`, `near`, `far` the edge columns
    (DEPENDENTS_HOP, DEPENDENCIES_HOP): `id`, the next instance; `direct`, the edge's
    flag. `direct`: a condition on an edge row `{e}` (`{e}.direct`: only the direct
    edges); `gate`: a condition on neither (when false, no edge is read). For a LATERAL
    join: one index probe of the edges at `at`, and one more per resource it leads to;
    whether the state has rows through a resource at all is asked once per value of
    `state` (an InitPlan: a state without them costs what it did before)."""
    through = _THROUGH[near]
    return f"""({
        instance_hop_sql(near, far, at=at, state=state, serial=serial, direct=direct, gate=gate)
    }
      UNION ALL
        SELECT e.{far}, d.direct AND e.direct FROM resource_dependencies d
        JOIN resource_dependencies e ON e.state_id = d.state_id AND e.{near} = d.{far}
        WHERE {gate} AND EXISTS (SELECT FROM resource_dependencies g
                                 WHERE g.state_id = {state} AND g.kind = '{through}')
          AND d.{near} = {at} AND d.kind = '{through}' AND {direct.format(e="d")}
          AND {valid_at("d", state, serial)} AND e.{far} <> {at} AND {direct.format(e="e")}
          AND {valid_at("e", state, serial)})"""


def through_kind(near: str) -> str:
    """The kind of edge row whose far end is a resource, for a hop from `near`'s side."""
    return _THROUGH[near]


def instance_hop_sql(
    near: str,
    far: str,
    *,
    at: str,
    state: str,
    serial: str,
    direct: str = "true",
    gate: str = "true",
) -> str:
    """hop_sql's edges declared instance to instance alone (no subquery parentheses): a
    reader that takes the edges through resources a resource at a time adds those."""
    return f"""SELECT d.{far} AS id, d.direct FROM resource_dependencies d
        WHERE {gate} AND d.{near} = {at} AND d.kind <> '{_THROUGH[near]}'
          AND {direct.format(e="d")} AND {valid_at("d", state, serial)}"""


def pairs_sql(state: str, serial: str) -> str:
    """A subquery of every declared edge instance to instance of state `state` at serial
    `serial`: `from_resource_id`, `to_resource_id`, `direct`."""
    return f"""(SELECT d.from_resource_id, d.to_resource_id, d.direct
        FROM resource_dependencies d
        WHERE d.kind = 'instance' AND {valid_at("d", state, serial)}
      UNION ALL
        SELECT d.from_resource_id, m.to_resource_id, d.direct
        FROM resource_dependencies d JOIN resource_dependencies m
          ON m.state_id = d.state_id AND m.from_resource_id = d.to_resource_id
        WHERE d.kind = 'resource' AND {valid_at("d", state, serial)}
          AND {valid_at("m", state, serial)} AND m.to_resource_id <> d.from_resource_id)"""


# The reason of a configured edge that no reference explains (app/configuration/edges.py).
_UNREFERENCED = "declared"


def configured_hop_sql(
    near: str,
    far: str,
    *,
    at: str,
    state: str,
    serial: str,
    gate: str = "true",
    through: bool = True,
) -> str:
    """hop_sql over a configured version's copy of its edges (configured_edges, at the
    grain they are declared: `instance` and `resource` rows, whose members are the
    state's `member` rows): a subquery of `id`, the next instance, `direct`, `reason` and
    `attributes`. A `resource` row leads to each member of its resource at `serial` but
    the instance it stands on, with its reason (a reference matches config addresses,
    the same for every member); the hop is direct when referenced, else when the row and
    the member are. `gate`: a condition on neither (when false, no edge is read). Without
    `through`, the `instance` rows alone: a reader that takes the rows through resources a
    resource at a time adds those (configured_via_sql, configured_spread_sql)."""
    flag = _configured_flag("c", "m")
    if near == "from_resource_id":
        # forwards: the configured `resource` rows from `at`, then their resources' members
        resource = f"""SELECT m.to_resource_id, {flag}, c.reason, c.attributes
        FROM configured_edges c
        JOIN resource_dependencies m ON m.state_id = c.state_id
            AND m.from_resource_id = c.to_resource_id AND m.kind = 'member'
        WHERE {gate} AND c.state_id = {state} AND c.serial = {serial} AND c.from_resource_id = {at}
          AND c.kind = 'resource' AND {valid_at("m", state, serial)} AND m.to_resource_id <> {at}"""
    else:
        # backwards: the `member` rows of `at`, then the configured `resource` rows to them
        resource = f"""SELECT c.from_resource_id, {flag}, c.reason, c.attributes
        FROM resource_dependencies m
        JOIN configured_edges c ON c.state_id = m.state_id AND c.serial = {serial}
            AND c.to_resource_id = m.from_resource_id AND c.kind = 'resource'
        WHERE {gate} AND m.to_resource_id = {at} AND m.kind = 'member'
          AND {valid_at("m", state, serial)} AND c.from_resource_id <> {at}"""
    instance = f"""SELECT c.{far} AS id, c.direct, c.reason, c.attributes FROM configured_edges c
        WHERE {gate} AND c.state_id = {state} AND c.serial = {serial} AND c.{near} = {at}
          AND c.kind = 'instance'"""
    if not through:
        return f"({instance})"
    return f"""({instance}
      UNION ALL
        {resource}
          AND EXISTS (SELECT FROM resource_dependencies g
                      WHERE g.state_id = {state} AND g.kind = '{_THROUGH[near]}'))"""


def _configured_flag(row: str, member: str) -> str:
    """The flag of a configured `resource` row's edge to a member: direct when a reference
    explains it, else when the row and the member both are."""
    return f"({row}.reason <> '{_UNREFERENCED}' OR ({row}.direct AND {member}.direct))"


def configured_via_sql(near: str, *, at: str, state: str, serial: str) -> str:
    """The first half of configured_hop_sql's hops through a resource, for a reader that
    counts a resource's instances once: a subquery of the resources (`resource`) one row
    from `at`, with the row's `reason` (NULL: the other half has it) and `direct`."""
    if near == "from_resource_id":
        return f"""(SELECT c.to_resource_id AS resource, c.reason, c.direct
        FROM configured_edges c
        WHERE c.state_id = {state} AND c.serial = {serial} AND c.from_resource_id = {at}
          AND c.kind = 'resource')"""
    return f"""(SELECT m.from_resource_id AS resource, NULL::text AS reason, m.direct
        FROM resource_dependencies m
        WHERE m.to_resource_id = {at} AND m.kind = 'member' AND {valid_at("m", state, serial)})"""


def configured_spread_sql(near: str, *, resource: str, state: str, serial: str) -> str:
    """The second half: a subquery of the instances (`id`) of the resource `resource`'s
    side, with the row's `reason` (NULL: the first half has it) and `direct`. (A
    `resource` row is never to its own instance's resource: app/graph/write/edges.py.)"""
    if near == "from_resource_id":
        return f"""(SELECT m.to_resource_id AS id, NULL::text AS reason, m.direct
        FROM resource_dependencies m
        WHERE m.from_resource_id = {resource} AND m.kind = 'member'
          AND {valid_at("m", state, serial)})"""
    return f"""(SELECT c.from_resource_id AS id, c.reason, c.direct
        FROM configured_edges c
        WHERE c.state_id = {state} AND c.serial = {serial} AND c.to_resource_id = {resource}
          AND c.kind = 'resource')"""
