"""What each dashboard page shows, read through the domain modules: one function per
page, each a fixed number of statements whatever the page holds (no N+1). Access
filters belong here, one place per page: each gets the caller (app.access) and shows
only the states it may read (one it may not is absent: 404) and the IaC scopes it
touches."""

import itertools
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from app.access import Principal, Role
from app.catalog.scopes import list_scopes
from app.errors import AppError, BadInput, NotFound
from app.graph import diff, edges, events, history, inventory, queries, resources
from app.graph.boxes import RadiusBoxes, radius_boxes
from app.graph.resources import ResourceFilter, ResourceKey
from app.graph.sensitive import sensitive_paths, withhold
from app.iac.graph import state_name as iac_state_name
from app.iac.state import StateRow, rows_by_scope
from app.jsonutil import JsonInputError, read
from app.leases import store as lease_store
from app.paging import ALL, EMPTY, Page

MASK = "(sensitive)"  # what the pages show for a value Terraform marks sensitive
STATES_PAGE = 1000
RECENT_EVENTS = 25
TIMELINE = 50
RESOURCES_PAGE = 100
HISTORY = 50
NEIGHBOURS = 100
DRAWN_PER_LAYER = 60  # boxes a column of the radius picture draws (the rest: "+K more")
PICTURE_DEPTH = 10  # the radius picture's depths by default (the rest: "N more beyond")
SINGLE_UP_TO = 20  # a depth of up to this many members draws each; a bigger one, groups
SEARCH_RESULTS = 100
IAC_APPLIES = 10


@dataclass(frozen=True)
class StateSummary:
    state: asyncpg.Record
    current: asyncpg.Record | None  # its current version (none yet: only locked)
    resources: int | None
    lock: asyncpg.Record | None  # who, operation, created_at


@dataclass(frozen=True)
class Overview:
    states: list[StateSummary]
    next_after: str | None  # the name to list the next page after
    totals: asyncpg.Record  # states, resources, locked
    events: list[asyncpg.Record]


async def overview(
    conn: asyncpg.Connection, caller: Principal, *, after: str | None = None
) -> Overview:
    """States with their current version and lock, the totals, the latest events."""
    readable = caller.patterns
    page = await queries.list_states(
        conn, first=STATES_PAGE, after=(after,) if after else None, readable=readable
    )
    ids = [r["state_id"] for r in page.rows]
    current = await queries.current_versions(conn, ids)
    counts = await queries.resource_counts(conn, [v["version_id"] for v in current.values()])
    held = await queries.locks_of(conn, ids)
    states = []
    for r in page.rows:
        version = current.get(r["state_id"])
        count = counts.get(version["version_id"]) if version else None
        states.append(StateSummary(r, version, count, held.get(r["state_id"])))
    recent = await events.list_events(
        conn, None, first=RECENT_EVENTS, count=False, readable=readable
    )
    return Overview(
        states,
        page.rows[-1]["state_name"] if page.has_next else None,
        await queries.totals(conn, readable),
        recent.get(ALL, EMPTY).rows,
    )


@dataclass(frozen=True)
class TimelineEntry:
    version: asyncpg.Record
    changes: diff.VersionDiff | None  # against the version before it (None: none kept)


@dataclass(frozen=True)
class StatePage:
    state: asyncpg.Record
    current: asyncpg.Record | None
    timeline: list[TimelineEntry]
    lock: dict[str, Any] | None  # the writer's
    outputs: list[asyncpg.Record]
    resources: Page[asyncpg.Record]
    search: str
    compared: tuple[int, int] | None  # (from serial, to serial)
    compare: diff.VersionDiff | None
    compare_error: str | None
    older: int | None  # the serial to list the versions before, when there are more
    may_force_unlock: bool  # an admin: the button shows
    plan_locks: list[dict[str, Any]] = field(default_factory=list)  # shared, beside `lock`
    leases: list[lease_store.Lease] = field(default_factory=list)  # live, oldest first


async def state_page(
    conn: asyncpg.Connection,
    caller: Principal,
    name: str,
    *,
    compare: tuple[int, int] | None = None,
    search: str = "",
    after: str | None = None,
    before: int | None = None,
) -> StatePage:
    """A state: its versions with what each changed (newest first, or those `before` a
    serial), the diff of two versions (`compare`: from, to; default the last change),
    outputs, lock and resources (address prefix, `after` an address)."""
    state = await queries.state_by_name(conn, name) if caller.may_read(name) else None
    if state is None:
        raise NotFound(f"no state {name!r}")
    state_id = state["state_id"]
    older = (before,) if before is not None else None
    versions = (await queries.versions_of(conn, [state_id], first=TIMELINE + 1, after=older)).get(
        state_id, EMPTY
    )
    rows = versions.rows  # newest first, with the one before the oldest shown
    if before is None:
        current = rows[0] if rows else None
        if compare is None and len(rows) > 1:
            compare = (rows[1]["serial"], rows[0]["serial"])
    else:
        current = (await queries.current_versions(conn, [state_id])).get(state_id)
    by_serial = {r["serial"]: r for r in rows}
    if compare is not None and compare[1] not in by_serial:
        by_serial.update(
            {
                serial: r
                for (_, serial), r in (
                    await queries.versions_at(conn, [(state_id, compare[1])])
                ).items()
            }
        )
    pairs = [(newer["version_id"], older["serial"]) for newer, older in itertools.pairwise(rows)]
    chosen = None
    if compare is not None and compare[1] in by_serial:
        chosen = (by_serial[compare[1]]["version_id"], compare[0])
    # once each: the chosen pair may be in the timeline (diff_versions answers every key)
    wanted = list(dict.fromkeys(pairs + ([chosen] if chosen else [])))
    found = await diff.diff_versions(conn, wanted)
    timeline = [
        TimelineEntry(v, _diff_or_none(found.get(pair)))
        for v, pair in zip(rows, pairs, strict=False)
    ]
    if len(rows) <= TIMELINE and rows:
        timeline.append(TimelineEntry(rows[-1], None))  # the first version
    compared, compare_error = None, None
    if compare is not None:
        result = found.get(chosen) if chosen else NotFound(f"no version at serial {compare[1]}")
        if isinstance(result, AppError):
            compare_error = result.message
        else:
            compared = result or diff.VersionDiff(compare[0], [], [], [])
    current_ids = [current["version_id"]] if current else []
    outputs = (
        (await queries.outputs_of(conn, current_ids)).get(current["version_id"], [])
        if (current)
        else []
    )
    held = await lease_store.holders(conn, state_id, name)
    listed: Page[asyncpg.Record] = EMPTY
    if current is not None:
        listed = (
            await resources.version_resources(
                conn,
                current_ids,
                ResourceFilter(address_prefix=search or None),
                first=RESOURCES_PAGE,
                after=(name, after) if after else None,
            )
        ).get(current["version_id"], EMPTY)
    more = len(rows) > TIMELINE
    return StatePage(
        state,
        current,
        timeline,
        held.lock,
        outputs,
        listed,
        search,
        compare,
        compared,
        compare_error,
        timeline[-1].version["serial"] if more else None,
        caller.has(Role.ADMIN),
        plan_locks=held.plan_locks,
        leases=held.leases,
    )


def _diff_or_none(found: diff.VersionDiff | AppError | None) -> diff.VersionDiff | None:
    return None if isinstance(found, AppError) else found


@dataclass(frozen=True)
class RadiusDepth:
    depth: int
    total: int  # its members


@dataclass(frozen=True)
class RadiusSummary:
    """A blast radius' size: within the picture's depth, by depth, and beyond it."""

    total: int
    layers: list[RadiusDepth]
    beyond: int = 0


@dataclass(frozen=True)
class ResourcePage:
    resource: asyncpg.Record
    attributes: Any  # sensitive values masked
    history: Page[history.HistoryEntry]
    dependencies: Page[asyncpg.Record]
    dependents: Page[asyncpg.Record]
    direction: edges.Direction
    radius: RadiusSummary
    max_depth: int
    boxes: RadiusBoxes  # the picture's groups and their bundled edges
    expanded: tuple[str, ...]  # groups drawn member by member


async def resource_page(
    conn: asyncpg.Connection,
    caller: Principal,
    state: str,
    address: str,
    *,
    serial: int | None = None,
    direction: edges.Direction = edges.Direction.DEPENDENTS,
    max_depth: int = PICTURE_DEPTH,
    limits: edges.WalkLimits,
    expanded: tuple[str, ...] = (),
) -> ResourcePage:
    """A resource (current version, or at `serial`): attributes, history, one hop each
    way, and its blast radius by depth and by box (a depth over SINGLE_UP_TO members in
    groups of a type and name, but `expanded`)."""
    record = await resources.find_resource(conn, state, address, serial, readable=caller.patterns)
    key: ResourceKey = (record["id"], record["version_id"])
    past = (await history.histories(conn, [key], first=HISTORY)).get(key, EMPTY)
    hops = {
        way: (await edges.neighbours(conn, [key], way, first=NEIGHBOURS)).get(key, EMPTY)
        for way in edges.Direction
    }
    # walked (and kept) by the first page that shows it; the boxes read the kept walk
    walked = await edges.blast_radius(
        conn,
        [key],
        direction,
        limits=limits,
        max_depth=max_depth,
        first=1,
        json=False,
        attributes=False,
    )
    boxes = RadiusBoxes([], [])
    if key in walked:
        boxes = await radius_boxes(
            conn,
            key,
            record["address"],
            direction,
            max_depth=max_depth,
            single_up_to=SINGLE_UP_TO,
            expanded=expanded,
        )
    depths: dict[int, int] = {}
    for depth, _, members, _ in boxes.sizes:
        depths[depth] = depths.get(depth, 0) + members
    radius = RadiusSummary(
        sum(depths.values()),
        [RadiusDepth(depth, depths[depth]) for depth in sorted(depths)],
        walked[key].beyond if key in walked else 0,
    )
    attributes = withhold(
        record["attributes"], sensitive_paths(record["sensitive_attributes"]), MASK
    )
    return ResourcePage(
        record,
        attributes,
        past,
        hops[edges.Direction.DEPENDENCIES],
        hops[edges.Direction.DEPENDENTS],
        direction,
        radius,
        max_depth,
        boxes,
        expanded,
    )


@dataclass(frozen=True)
class InventoryPage:
    groups: dict[str, list[asyncpg.Record]]  # by grouping: (key, count), largest first
    query: str  # the attribute search as typed (a JSON object)
    type: str
    found: Page[asyncpg.Record] | None
    error: str | None


async def inventory_page(
    conn: asyncpg.Connection, caller: Principal, *, query: str = "", rtype: str = ""
) -> InventoryPage:
    """Counts by type, provider, state and module; with `query` (a JSON object the
    attributes contain) and/or `rtype`, the resources that match."""
    readable = tuple(caller.patterns) if caller.patterns is not None else None
    seen = ResourceFilter(readable=readable)
    groups = {
        g.value: await inventory.inventory(conn, g, seen)
        for g in inventory.GroupBy
        if g is not inventory.GroupBy.MODULE_SOURCE  # the API's, with the configurations
    }
    found, error = None, None
    if query or rtype:
        try:
            attributes = _json_object(query) if query else None
            f = ResourceFilter(type=rtype or None, attributes=attributes, readable=readable)
            found = await resources.search_resources(conn, f, first=SEARCH_RESULTS)
        except BadInput as exc:
            error = exc.message
    return InventoryPage(groups, query, rtype, found, error)


def _json_object(text: str) -> Any:
    try:
        return read(text.encode())
    except JsonInputError as exc:
        raise BadInput(f"the attribute search is not JSON: {exc}") from None


@dataclass(frozen=True)
class System:
    name: str
    state_name: str  # its graph state, iac:{scope}/{system}
    rows: list[StateRow]
    applies: list[asyncpg.Record] = field(default_factory=list)  # newest first


@dataclass(frozen=True)
class Scope:
    slug: str
    name: str
    systems: list[System]


async def iac_page(conn: asyncpg.Connection, caller: Principal) -> list[Scope]:
    """Every scope the caller touches, its systems: the resources each manages and its
    last applies (events of its graph state, with the plan's summary)."""
    scopes = [s for s in await list_scopes(conn) if caller.may_touch_scope(s["slug"])]
    rows = await rows_by_scope(conn)
    systems: dict[str, dict[str, list[StateRow]]] = {}
    for scope in scopes:
        for row in rows.get(str(scope["id"]), []):
            systems.setdefault(scope["slug"], {}).setdefault(row.system, []).append(row)
    names = [iac_state_name(slug, s) for slug, by in systems.items() for s in by]
    trail = await events.list_events(conn, names, first=IAC_APPLIES) if names else {}
    return [
        Scope(
            scope["slug"],
            scope["name"],
            [
                System(
                    system,
                    iac_state_name(scope["slug"], system),
                    system_rows,
                    trail.get(iac_state_name(scope["slug"], system), EMPTY).rows,
                )
                for system, system_rows in systems.get(scope["slug"], {}).items()
            ],
        )
        for scope in scopes
    ]
