"""The graph's root query fields, a mixin of the root Query (see app/api/schema.py)."""

import strawberry
from strawberry import relay

from app.access import Role
from app.api.context import Info
from app.api.graph.blast import BlastRadiusConnection
from app.api.graph.columns import blast_arguments, blast_keyset
from app.api.graph.event import Event
from app.api.graph.inputs import (
    CrossStatesArg,
    Direction,
    InventoryGroup,
    MaxDepthArg,
    ResourceFilter,
    StateFilter,
    graph_filter,
)
from app.api.graph.links import StateLink, StatesGraph, StatesGraphLink
from app.api.graph.lists import RESOURCE_LISTS, prefetch_resources
from app.api.graph.resource import InventoryEntry, Resource
from app.api.graph.rows import event_of, link_of, resources_of, state_of
from app.api.graph.state import State
from app.api.pagination import (
    DEFAULT_FIRST,
    AfterArg,
    Connection,
    FirstArg,
    connection,
    decode_cursor,
    page_args,
)
from app.api.runtime.lookahead import selected_below
from app.api.runtime.prefetch import resolve
from app.graph import edges, events, inventory, links, queries, resources
from app.paging import ALL, EMPTY


@strawberry.type
class GraphQuery:
    node: relay.Node | None = relay.node(
        description="Any State, StateVersion, Resource, Event or TerraformPlan by its global id."
    )

    @strawberry.field(description="States by name.")
    async def states(
        self,
        info: Info,
        first: FirstArg = DEFAULT_FIRST,
        after: AfterArg = None,
        filter: StateFilter | None = None,
    ) -> Connection[State]:
        args = page_args(first, after, queries.STATE_KEY)
        f = filter or StateFilter()
        page = await info.context.with_conn(
            queries.list_states,
            first=args.first,
            after=args.after,
            name_prefix=f.name_prefix,
            kind=f.kind,
            readable=info.context.principal.patterns,
        )
        return connection(page, [state_of(r) for r in page.rows], after=after)

    @strawberry.field
    async def state(self, info: Info, name: str) -> State | None:
        if not info.context.principal.may_read(name):
            return None
        r = await info.context.with_conn(queries.state_by_name, name)
        return state_of(r) if r else None

    @strawberry.field(
        description="Resources of the current version of every state (or of `filter.state`), "
        "by state name then address."
    )
    async def resources(
        self,
        info: Info,
        first: FirstArg = DEFAULT_FIRST,
        after: AfterArg = None,
        filter: ResourceFilter | None = None,
    ) -> Connection[Resource]:
        args = page_args(first, after, resources.RESOURCE_KEY)
        page = await info.context.with_conn(
            resources.search_resources,
            graph_filter(filter, info.context.principal),
            first=args.first,
            after=args.after,
            count=any(f.name == "totalCount" for f in selected_below(info, ())),
        )
        return await prefetch_resources(info, page, after)

    @strawberry.field(
        description="Resource instances of the current versions counted by group, largest first."
    )
    async def inventory(
        self, info: Info, group_by: InventoryGroup, filter: ResourceFilter | None = None
    ) -> list[InventoryEntry]:
        records = await info.context.with_conn(
            inventory.inventory, group_by, graph_filter(filter, info.context.principal)
        )
        return [InventoryEntry(key=r["key"], count=r["count"]) for r in records]

    @strawberry.field(
        description="The blast radius of a resource of a state (current version, or at "
        "`serial`): every resource that depends on it, transitively through the declared "
        "dependencies (DEPENDENTS), or that it depends on (DEPENDENCIES), once, at its "
        "shortest depth over direct edges, by depth then address. The whole radius unless "
        "`maxDepth`, which says what it left out (`truncated`, `beyondCount`). A cursor "
        "pages the version it was taken at, even after a newer one was written."
    )
    async def blast_radius(
        self,
        info: Info,
        state: str,
        address: str,
        direction: Direction = edges.Direction.DEPENDENTS,
        max_depth: MaxDepthArg = None,
        serial: int | None = None,
        first: FirstArg = DEFAULT_FIRST,
        after: AfterArg = None,
        cross_states: CrossStatesArg = False,
    ) -> BlastRadiusConnection:
        if serial is None and after is not None:
            # the version it started on
            serial = decode_cursor(after, blast_keyset(cross_states))[0]
        [root] = resources_of(
            [
                await info.context.with_conn(
                    resources.find_resource,
                    state,
                    address,
                    serial,
                    readable=info.context.principal.patterns,
                )
            ]
        )
        arguments = blast_arguments(direction, max_depth, first, after, cross_states)
        found: BlastRadiusConnection = await resolve(
            info, root, RESOURCE_LISTS["blastRadius"], arguments, RESOURCE_LISTS
        )
        return found

    @strawberry.field(
        description="The states map: every state that reads or is read by another through "
        "terraform_remote_state (current versions), and the links between them."
    )
    async def states_graph(self, info: Info) -> StatesGraph:
        records = await info.context.with_conn(
            links.read_links, readable=info.context.principal.patterns
        )
        found = {
            s.name: s for link in map(link_of, records) for s in (link.consumer, link.producer)
        }
        return StatesGraph(
            states=[found[name] for name in sorted(found)],
            links=[
                StatesGraphLink(
                    consumer=r["consumer_name"],
                    producer=r["producer_name"],
                    address=r["address"],
                    outputs=[o["name"] for o in r["outputs"]],
                    stale=r["stale"],
                )
                for r in records
            ],
        )

    @strawberry.field(
        description="The consumers of `state` that are stale: an output their data source read "
        "has another value in its current version (only those outputs are listed)."
    )
    async def stale_consumers(self, info: Info, state: str) -> list[StateLink]:
        if not info.context.principal.may_read(state):
            return []  # as for a state that is not there
        producer = await info.context.with_conn(queries.state_by_name, state)
        if producer is None:
            return []
        records = await info.context.graph.consumers.load(producer["state_id"])
        return [link_of(r, changed_only=True) for r in records if r["stale"]]

    @strawberry.field(description="The audit trail, newest first: of one state, or of all.")
    async def events(
        self,
        info: Info,
        state: str | None = None,
        first: FirstArg = DEFAULT_FIRST,
        after: AfterArg = None,
    ) -> Connection[Event]:
        args = page_args(first, after, events.EVENT_KEY)
        pages = await info.context.with_conn(
            events.list_events,
            [state] if state is not None else None,
            first=args.first,
            after=args.after,
            count=any(f.name == "totalCount" for f in selected_below(info, ())),
            readable=info.context.principal.patterns,
            tokens=info.context.principal.has(Role.ADMIN),
        )
        page = pages.get(state if state is not None else ALL, EMPTY)
        return connection(page, [event_of(r) for r in page.rows], after=after)
