"""The graph's GraphQL types, built from the rows the graph module read.

Scalar fields are plain attributes filled from one row (no resolver per
field); lists hanging off an object load through the per-request loaders,
so a page of N objects costs one statement per list, not N.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterable, Mapping
from datetime import datetime
from typing import Annotated, Any, TypeVar
from uuid import UUID

import strawberry
from strawberry import relay
from strawberry.dataloader import DataLoader
from strawberry.scalars import JSON

from app.access import Principal
from app.api.context import Info
from app.api.graph.loaders import Blast, Filtered, Hop
from app.api.leases.types import StateLeases
from app.api.lookahead import Selected, descend
from app.api.pagination import (
    DEFAULT_FIRST,
    AfterArg,
    Connection,
    FirstArg,
    connection,
    connection_nodes,
    page_args,
)
from app.api.prefetch import ListField, Lists, prefetch_below, resolve
from app.api.readers.types import StateReaders
from app.db import Row
from app.errors import BadInput
from app.graph import across, edges, events, inventory, queries, resources
from app.graph import diff as graph_diff
from app.graph import history as graph_history
from app.paging import Keyset, Page

# The domain's enums, registered with Strawberry in place (the call form returns the same
# class, which the annotations name directly so that type checkers see a class).
StateKind = queries.StateKind
ResourceMode = resources.Mode
Direction = edges.Direction
InventoryGroup = inventory.GroupBy
strawberry.enum(StateKind, description="Who writes the state.")
strawberry.enum(ResourceMode, name="ResourceMode")
strawberry.enum(
    Direction,
    description="DEPENDENTS: what depends on it (what breaks if it changes); "
    "DEPENDENCIES: what it depends on.",
)
strawberry.enum(InventoryGroup, name="InventoryGroup")
CrossStatesArg = Annotated[
    bool,
    strawberry.argument(
        description="On through the links between states: from a resource to the consumers' "
        "data sources that read outputs derived from it (and on through their graphs), or "
        "back to the producers' resources (DEPENDENCIES). Walked again for every page."
    ),
]
MaxDepthArg = Annotated[
    int | None,
    strawberry.argument(
        description="Lists only the members within this depth (1 or more); `totalCount` "
        "counts them, `beyondCount` the deeper ones. Null (the default): the whole radius."
    ),
]
N = TypeVar("N")
K = TypeVar("K")


def parse_id(value: str) -> UUID:
    try:
        return UUID(value)
    except ValueError:
        raise BadInput(f"not an id: {value!r}") from None


def parse_resource_id(value: str) -> resources.ResourceKey:
    """A resource's id: its row, at a version (a row is shared by the versions of its
    serial range, and what it links to depends on the version)."""
    row_id, _, version_id = value.partition(":")
    return parse_id(row_id), parse_id(version_id)


async def load_nodes(
    info: Info,
    loader: DataLoader[K, Any],
    node_ids: Iterable[str],
    build: Callable[[Any], N],
    parse: Callable[[str], K],
) -> list[N | None]:
    """A node type's `resolve_nodes`: rows by parsed ID through its loader, each built;
    None if there is no such row, or it is of a state the caller may not read (a state's
    rows never have the empty name of token events: one check serves every type)."""
    rows = await loader.load_many([parse(i) for i in node_ids])
    principal = info.context.principal
    return [build(row) if row and events.may_read_event(principal, row) else None for row in rows]


@strawberry.input(description="Resources matching all the given fields.")
class ResourceFilter:
    state: str | None = strawberry.field(default=None, description="The state's name.")
    type: str | None = None
    provider: str | None = None
    module: str | None = strawberry.field(
        default=None, description='The module path; "" for the root module.'
    )
    mode: ResourceMode | None = None
    address: str | None = None
    address_prefix: str | None = None
    attributes: JSON | None = strawberry.field(
        default=None,
        description='A JSON object the attributes contain, e.g. {"public_access": true}.',
    )

    def to_graph(self) -> resources.ResourceFilter:
        return resources.ResourceFilter(**dataclasses.asdict(self))


def graph_filter(
    f: ResourceFilter | None, caller: Principal | None = None
) -> resources.ResourceFilter:
    """The graph's filter; with `caller`, of the states it may read too (a root list)."""
    graph = f.to_graph() if f is not None else resources.NO_FILTER
    if caller is None or caller.patterns is None:
        return graph
    return dataclasses.replace(graph, readable=tuple(caller.patterns))


@strawberry.input
class StateFilter:
    name_prefix: str | None = None
    kind: StateKind | None = None


@strawberry.type
class Lock:
    id: str
    holder: str | None = strawberry.field(description="The token that took it.")
    who: str | None
    operation: str | None
    created: datetime
    info: JSON = strawberry.field(description="The LockInfo the locking client sent.")


@strawberry.type
class Output:
    name: str
    value: JSON | None = strawberry.field(description="Null when sensitive.")
    type: JSON | None
    sensitive: bool
    state_id: strawberry.Private[UUID]
    version_id: strawberry.Private[UUID]

    @strawberry.field(
        description="The resource instances of its version its value came from (inferred: "
        "the value, or a string inside it, is the value of their attribute at `path`; only "
        "values of 10 characters or more, held by few instances)."
    )
    async def sources(self, info: Info) -> list[OutputSource]:
        records = await info.context.graph.output_sources.load(self.version_id)
        mine = [r for r in records if r["output_name"] == self.name]
        return [
            OutputSource(resource=resource, path=r["path"], inferred=True)
            for r, resource in zip(mine, resources_of(mine), strict=True)
        ]

    @strawberry.field(
        description="The consumers' data sources (their current versions) that read this "
        "output of the state through terraform_remote_state."
    )
    async def readers(self, info: Info) -> list[StateLink]:
        records = await info.context.graph.consumers.load(self.state_id)
        return [link_of(r) for r in records if any(o["name"] == self.name for o in r["outputs"])]


@strawberry.type(description="Where an output's value came from.")
class OutputSource:
    resource: Resource
    path: list[str] = strawberry.field(
        description="The attribute holding the value, as `Resource.attributes(path:)` takes it."
    )
    inferred: bool = strawberry.field(
        description="Always true: found by value, Terraform does not record it."
    )


@strawberry.type(description="An output as a terraform_remote_state data source read it.")
class LinkOutput:
    name: str
    read: JSON | None = strawberry.field(description="The value read; null when sensitive.")
    current: JSON | None = strawberry.field(
        description="Its value in the producer's current version; null when sensitive or missing."
    )
    present: bool = strawberry.field(description="Whether the producer has it now.")
    sensitive: bool = strawberry.field(
        description="Sensitive in the producer (in any version it keeps): values never shown, "
        "compared by hash."
    )
    changed: bool = strawberry.field(description="The current value differs from the one read.")
    since: int | None = strawberry.field(
        description="Changed: the producer serial at which the value stopped being the one read."
    )


def _link_outputs(outputs: list[dict[str, Any]], *, changed_only: bool = False) -> list[LinkOutput]:
    return [
        LinkOutput(
            name=o["name"],
            read=o["read"],
            current=o["current"],
            present=o["present"],
            sensitive=o["sensitive"],
            changed=o["changed"],
            since=o["since"],
        )
        for o in outputs
        if o["changed"] or not changed_only
    ]


@strawberry.type(
    description="A terraform_remote_state data source of a consumer's current version that "
    "reads a producer state of this server."
)
class StateLink:
    address: str = strawberry.field(description="The data source's address in the consumer.")
    outputs: list[LinkOutput] = strawberry.field(description="The outputs it read, by name.")
    stale: bool = strawberry.field(description="An output it read has changed since.")
    since: int | None = strawberry.field(
        description="Stale: the producer serial since which (the earliest of its outputs')."
    )
    consumer: State
    producer: State


@strawberry.type(description="A link of the states map, by state names.")
class StatesGraphLink:
    consumer: str
    producer: str
    address: str = strawberry.field(description="The consumer's data source.")
    outputs: list[str] = strawberry.field(description="The outputs it read.")
    stale: bool


@strawberry.type(description="The states that read or are read through terraform_remote_state.")
class StatesGraph:
    states: list[State] = strawberry.field(description="By name.")
    links: list[StatesGraphLink] = strawberry.field(description="By consumer, then address.")


def link_of(r: Row, *, changed_only: bool = False) -> StateLink:
    return StateLink(
        address=r["address"],
        outputs=_link_outputs(r["outputs"], changed_only=changed_only),
        stale=r["stale"],
        since=r["since"],
        consumer=_linked_state(r, "consumer"),
        producer=_linked_state(r, "producer"),
    )


def _linked_state(r: Row, role: str) -> State:
    """The consumer's or the producer's State, from a link's row (app/graph/links.py)."""
    return State(
        id=str(r[f"{role}_id"]),
        state_id=r[f"{role}_id"],
        name=r[f"{role}_name"],
        kind=queries.StateKind(r[f"{role}_kind"]),
        lineage=r[f"{role}_lineage"],
        created_at=r[f"{role}_created_at"],
    )


@strawberry.type
class AttributeChange:
    path: list[str]
    old: JSON | None = strawberry.field(description="Null when absent or sensitive.")
    new: JSON | None = strawberry.field(description="Null when absent or sensitive.")
    sensitive: bool

    @classmethod
    def of(cls, a: graph_diff.AttributeChange) -> AttributeChange:
        return cls(path=list(a.path), old=a.old, new=a.new, sensitive=a.sensitive)


HistoryChange = graph_history.Change
strawberry.enum(HistoryChange, name="HistoryChange")


@strawberry.type(description="A version in which a resource's address changed.")
class HistoryEntry:
    serial: int
    change: HistoryChange
    created_at: datetime | None = strawberry.field(
        description="When the version was written (null when retention removed it)."
    )
    actor: str | None
    attributes: list[AttributeChange] = strawberry.field(
        description="CHANGED: the attribute paths that changed (sensitive values null)."
    )
    fields: list[str] = strawberry.field(
        description="CHANGED: the instance's other fields that changed (status, "
        "dependencies, private, ...), by name."
    )

    @classmethod
    def of(cls, e: graph_history.HistoryEntry) -> HistoryEntry:
        return cls(
            serial=e.serial,
            change=e.change,
            created_at=e.created_at,
            actor=e.actor,
            attributes=[AttributeChange.of(c) for c in e.attributes],
            fields=e.fields,
        )


@strawberry.type
class ResourceChange:
    address: str
    changes: list[AttributeChange]


@strawberry.type
class VersionDiff:
    against: int = strawberry.field(description="The serial compared with.")
    added: list[str] = strawberry.field(description="Addresses only in this version.")
    removed: list[str] = strawberry.field(description="Addresses only in `against`.")
    changed: list[ResourceChange] = strawberry.field(
        description="Addresses in both whose attributes differ."
    )

    @classmethod
    def of(cls, d: graph_diff.VersionDiff) -> VersionDiff:
        return cls(
            against=d.against,
            added=d.added,
            removed=d.removed,
            changed=[
                ResourceChange(
                    address=c.address,
                    changes=[AttributeChange.of(a) for a in c.changes],
                )
                for c in d.changed
            ],
        )


@strawberry.type
class Event(relay.Node):
    id: relay.NodeID[str]
    state_name: str
    action: str
    actor: str
    serial: int | None
    detail: JSON
    created_at: datetime

    @classmethod
    async def resolve_nodes(  # type: ignore[override]  # one signature for Node's overloads
        cls, *, info: Info, node_ids: Iterable[str], required: bool = False
    ) -> list[Event | None]:
        return await load_nodes(info, info.context.graph.event, node_ids, event_of, parse_id)


@strawberry.type
class State(StateReaders, StateLeases, relay.Node):
    id: relay.NodeID[str]
    name: str
    kind: StateKind
    lineage: str | None
    created_at: datetime
    state_id: strawberry.Private[UUID]

    @strawberry.field
    async def lock(self, info: Info) -> Lock | None:
        r = await info.context.graph.lock.load(self.state_id)
        if r is None:
            return None
        return Lock(
            id=r["lock_id"],
            holder=r["holder"],
            who=r["who"],
            operation=r["operation"],
            created=r["created_at"],
            info=r["info"],
        )

    @strawberry.field(
        description="Whether the current version is encrypted by OpenTofu (false with none)."
    )
    async def encrypted(self, info: Info) -> bool:
        r = await info.context.graph.current_version.load(self.state_id)
        return r is not None and r["version_encrypted"]

    @strawberry.field(description="The version with the highest serial.")
    async def current_version(self, info: Info) -> StateVersion | None:
        r = await info.context.graph.current_version.load(self.state_id)
        return version_of(r, self) if r else None

    @strawberry.field(description="Newest first.")
    async def versions(
        self,
        info: Info,
        first: FirstArg = DEFAULT_FIRST,
        after: AfterArg = None,
    ) -> Connection[StateVersion]:
        args = page_args(first, after, queries.VERSION_KEY)
        page = await info.context.graph.versions.load((self.state_id, args))
        return connection(page, [version_of(r, self) for r in page.rows], after=after)

    @strawberry.field
    async def version(self, info: Info, serial: int) -> StateVersion | None:
        r = await info.context.graph.version_at.load((self.state_id, serial))
        return version_of(r, self) if r else None

    @strawberry.field(description="Newest first.")
    async def events(
        self,
        info: Info,
        first: FirstArg = DEFAULT_FIRST,
        after: AfterArg = None,
    ) -> Connection[Event]:
        args = page_args(first, after, events.EVENT_KEY)
        page = await info.context.graph.events.load((self.name, args))
        return connection(page, [event_of(r) for r in page.rows], after=after)

    @strawberry.field(
        description="Who reads this state: the consumers' terraform_remote_state data sources "
        "(current versions), by consumer then address."
    )
    async def consumers(self, info: Info) -> list[StateLink]:
        return [link_of(r) for r in await info.context.graph.consumers.load(self.state_id)]

    @strawberry.field(
        description="Whom this state reads: its current version's terraform_remote_state data "
        "sources that read states of this server, by address."
    )
    async def producers(self, info: Info) -> list[StateLink]:
        return [link_of(r) for r in await info.context.graph.producers.load(self.state_id)]

    @strawberry.field(description="The current version's outputs that no consumer reads.")
    async def unread_outputs(self, info: Info) -> list[str]:
        version = await info.context.graph.current_version.load(self.state_id)
        if version is None:
            return []
        read = {
            o["name"]
            for r in await info.context.graph.consumers.load(self.state_id)
            for o in r["outputs"]
        }
        outputs = await info.context.graph.outputs.load(version["version_id"])
        return [o["name"] for o in outputs if o["name"] not in read]

    @classmethod
    async def resolve_nodes(  # type: ignore[override]  # one signature for Node's overloads
        cls, *, info: Info, node_ids: Iterable[str], required: bool = False
    ) -> list[State | None]:
        return await load_nodes(info, info.context.graph.state, node_ids, state_of, parse_id)


@strawberry.type
class StateVersion(relay.Node):
    id: relay.NodeID[str]
    serial: int
    lineage: str
    terraform_version: str | None
    created_at: datetime
    created_by: str
    encrypted: bool = strawberry.field(
        description="Encrypted by OpenTofu on the client: stored and served as written, "
        "with no resources or outputs (the server cannot read it)."
    )
    state: State
    version_id: strawberry.Private[UUID]

    @strawberry.field(description="By address.")
    async def resources(
        self,
        info: Info,
        first: FirstArg = DEFAULT_FIRST,
        after: AfterArg = None,
        filter: ResourceFilter | None = None,
    ) -> Connection[Resource]:
        args = Filtered(graph_filter(filter), page_args(first, after, resources.RESOURCE_KEY))
        page = await info.context.graph.resources.load((self.version_id, args))
        return await prefetch_resources(info, page, after)

    @strawberry.field(description="In document order.")
    async def outputs(self, info: Info) -> list[Output]:
        records = await info.context.graph.outputs.load(self.version_id)
        return [
            Output(
                name=r["name"],
                value=r["value"],
                type=r["type"],
                sensitive=r["sensitive"],
                state_id=self.state.state_id,
                version_id=self.version_id,
            )
            for r in records
        ]

    @strawberry.field
    async def resource_count(self, info: Info) -> int:
        count: int = await info.context.graph.resource_count.load(self.version_id)
        return count

    @strawberry.field(description="What changed from version `against` (a serial) to this one.")
    async def diff(self, info: Info, against: int) -> VersionDiff:
        return VersionDiff.of(await info.context.graph.diff.load((self.version_id, against)))

    @classmethod
    async def resolve_nodes(  # type: ignore[override]  # one signature for Node's overloads
        cls, *, info: Info, node_ids: Iterable[str], required: bool = False
    ) -> list[StateVersion | None]:
        return await load_nodes(info, info.context.graph.version, node_ids, version_of, parse_id)


@strawberry.type
class BlastRadiusNode:
    resource: Resource
    depth: int = strawberry.field(
        description="Hops from the root on a shortest path (crossStates: a hop between states, "
        "from a resource to a consumer's data source reading an output derived from it, counts "
        "one)."
    )
    path: list[str] = strawberry.field(description="Addresses from the root to this resource.")
    path_states: list[str] = strawberry.field(
        description="The state of each address of `path` (they differ only with crossStates)."
    )


@strawberry.type(
    name="BlastRadiusNodeConnection",
    description="A page of a blast radius. Its members are every resource that declares, "
    "transitively, a dependency on the root (DEPENDENTS) or that the root declares "
    "(DEPENDENCIES), whatever their depth: `totalCount + beyondCount` is their number.",
)
class BlastRadiusConnection(Connection[BlastRadiusNode]):
    beyond: strawberry.Private[int]

    @strawberry.field(
        description="The members within maxDepth, all pages (without one: every member)."
    )
    def total_count(self) -> int:
        if self.total is None:
            raise AssertionError("a page counted without its total: select-aware code is wrong")
        return self.total

    @strawberry.field(description="Whether maxDepth left members out (beyondCount > 0).")
    def truncated(self) -> bool:
        return self.beyond > 0

    @strawberry.field(description="The members deeper than maxDepth, not listed (0 without one).")
    def beyond_count(self) -> int:
        return self.beyond


@strawberry.type(description="One resource instance of a state version.")
class Resource(relay.Node):
    id: relay.NodeID[str]
    address: str
    mode: ResourceMode
    type: str
    name: str
    provider: str
    module: str | None = strawberry.field(description="The module path; null in the root module.")
    index_key: JSON | None = strawberry.field(description="count index (Int) or for_each key.")
    each: str | None
    deposed: str | None
    status: str | None
    sensitive_attributes: JSON | None = strawberry.field(
        description="The attribute paths Terraform marks sensitive."
    )
    state: State
    version: StateVersion
    resource_id: strawberry.Private[UUID]
    raw_attributes: strawberry.Private[Any]  # UNLOADED: read without (loaded when selected)
    prefetched: strawberry.Private[dict[Hashable, Any]] = dataclasses.field(default_factory=dict)

    @strawberry.field(
        description="The attributes, or the value at `path` (keys; list indexes as strings). "
        "Sensitive values are null."
    )
    def attributes(self, info: Info, path: list[str] | None = None) -> JSON | None:
        if self.raw_attributes is UNLOADED:
            # an awaitable of the value (graphql-core awaits what resolvers return)
            return self._load_attributes(info, path)  # type: ignore[return-value]
        value: JSON | None = resources.attribute_value(
            self.raw_attributes, self.sensitive_attributes, path or ()
        )
        return value

    async def _load_attributes(self, info: Info, path: list[str] | None) -> Any:
        loaded = await info.context.graph.attributes.load((self.resource_id, self.state.state_id))
        return resources.attribute_value(loaded, self.sensitive_attributes, path or ())

    @strawberry.field(
        description="What it depends on, by address. `direct`: only the edges no other "
        "path implies (Terraform writes dependencies transitively closed)."
    )
    def dependencies(
        self,
        info: Info,
        first: FirstArg = DEFAULT_FIRST,
        after: AfterArg = None,
        direct: bool = False,
    ) -> Connection[Resource]:
        arguments = {"first": first, "after": after, "direct": direct}
        # the connection, or an awaitable of it (graphql-core awaits what resolvers return)
        return resolve(info, self, RESOURCE_LISTS["dependencies"], arguments, RESOURCE_LISTS)  # type: ignore[no-any-return]

    @strawberry.field(
        description="What depends on it, by address. `direct`: only the edges no other "
        "path implies (Terraform writes dependencies transitively closed)."
    )
    def dependents(
        self,
        info: Info,
        first: FirstArg = DEFAULT_FIRST,
        after: AfterArg = None,
        direct: bool = False,
    ) -> Connection[Resource]:
        arguments = {"first": first, "after": after, "direct": direct}
        # the connection, or an awaitable of it (graphql-core awaits what resolvers return)
        return resolve(info, self, RESOURCE_LISTS["dependents"], arguments, RESOURCE_LISTS)  # type: ignore[no-any-return]

    @strawberry.field(
        description="The versions in which this address changed, up to this resource's "
        "version, newest first: created, changed (which attributes and fields), removed."
    )
    async def history(
        self, info: Info, first: FirstArg = DEFAULT_FIRST, after: AfterArg = None
    ) -> Connection[HistoryEntry]:
        args = page_args(first, after, graph_history.HISTORY_KEY)
        page = await info.context.graph.history.load((self.key, args))
        return connection(page, [HistoryEntry.of(e) for e in page.rows], after=after)

    @strawberry.field(
        description="Every resource that depends on this one, transitively through the "
        "declared dependencies (DEPENDENTS), or that it depends on (DEPENDENCIES), once, "
        "at its shortest depth over direct edges (those no other path implies), by depth "
        "then address. The whole radius unless `maxDepth`, which says what it left out."
    )
    def blast_radius(
        self,
        info: Info,
        direction: Direction = edges.Direction.DEPENDENTS,
        max_depth: MaxDepthArg = None,
        first: FirstArg = DEFAULT_FIRST,
        after: AfterArg = None,
        cross_states: CrossStatesArg = False,
    ) -> BlastRadiusConnection:
        arguments = blast_arguments(direction, max_depth, first, after, cross_states)
        # the connection, or an awaitable of it (graphql-core awaits what resolvers return)
        return resolve(info, self, RESOURCE_LISTS["blastRadius"], arguments, RESOURCE_LISTS)  # type: ignore[no-any-return]

    @classmethod
    async def resolve_nodes(  # type: ignore[override]  # one signature for Node's overloads
        cls, *, info: Info, node_ids: Iterable[str], required: bool = False
    ) -> list[Resource | None]:
        return await load_nodes(
            info, info.context.graph.resource, node_ids, _resource_of, parse_resource_id
        )

    @property
    def key(self) -> resources.ResourceKey:
        return (self.resource_id, self.version.version_id)


@strawberry.type
class InventoryEntry:
    key: str = strawberry.field(
        description='The group: a type, provider, state or module ("" root).'
    )
    count: int


def _direction(value: Any) -> edges.Direction:
    """From a resolver (the enum), a literal (its name) or a variable (its value)."""
    if value is None or isinstance(value, edges.Direction):
        return value or edges.Direction.DEPENDENTS
    return (
        edges.Direction[value] if value in edges.Direction.__members__ else edges.Direction(value)
    )


def _hop_key(direction: edges.Direction) -> Callable[[Mapping[str, Any], list[Selected]], Hop]:
    def key(arguments: Mapping[str, Any], selected: list[Selected]) -> Hop:
        first, after = arguments.get("first"), arguments.get("after")
        direct = bool(arguments.get("direct"))
        return Hop(direction, page_args(first, after, edges.NEIGHBOUR_KEY), direct)

    return key


# What a connection shows without its rows.
_ROWLESS = frozenset({"totalCount", "truncated", "beyondCount", "__typename"})
# The fields of a Resource read from resources.JSON_COLUMNS: a blast radius page whose
# resources show none of them reads its rows without (the attributes bring them too).
_JSON_FIELDS = frozenset({"indexKey", "sensitiveAttributes"})


def blast_keyset(cross_states: bool) -> Keyset:
    return across.CROSS_BLAST_KEY if cross_states else edges.BLAST_KEY


def _blast_key(arguments: Mapping[str, Any], selected: list[Selected]) -> Blast:
    cross = bool(arguments.get("crossStates"))
    page = page_args(arguments.get("first"), arguments.get("after"), blast_keyset(cross))
    direction = _direction(arguments.get("direction"))
    shown = {field.name for field in descend(selected, ())}
    resource = {field.name for field in descend(selected, ("edges", "node", "resource"))}
    return Blast(
        direction,
        arguments.get("maxDepth"),
        page,
        rows=not shown <= _ROWLESS,
        json=not resource.isdisjoint(_JSON_FIELDS),
        attributes="attributes" in resource,
        cross_states=cross,
    )


async def _load_hops(
    info: Info, owners: list[Resource], key: Hop, after: str | None
) -> list[Connection[Resource]]:
    pages = await info.context.graph.neighbours.load_many([(o.key, key) for o in owners])
    return [connection(page, resources_of(page.rows), after=after) for page in pages]


async def _load_blasts(
    info: Info, owners: list[Resource], key: Blast, after: str | None
) -> list[BlastRadiusConnection]:
    roots = [(o.key, key) for o in owners]
    pages = await info.context.graph.blast_radius.load_many(roots)
    return [
        blast_connection(page, after, None if key.cross_states else o.version)
        for page, o in zip(pages, owners, strict=True)
    ]


def blast_connection(
    page: Page[Any], after: str | None, version: StateVersion | None
) -> BlastRadiusConnection:
    """A page of a blast radius whose root is at `version` (its rows are too, their paths
    as the walk encoded them); `version` None: across states (rows carry their versions,
    paths and path states)."""
    nodes = []
    for r, resource in zip(page.rows, resources_of(page.rows, version), strict=True):
        if version is None:
            path, path_states = r["path"], r["path_states"]
        else:
            path = edges.path_addresses(r["path"])
            path_states = [version.state.name] * len(path)
        nodes.append(
            BlastRadiusNode(resource=resource, depth=r["depth"], path=path, path_states=path_states)
        )
    found = connection(page, nodes, after=after)
    return BlastRadiusConnection(
        edges=found.edges, page_info=found.page_info, total=found.total, beyond=page.beyond
    )


# The list fields of a resource, filled ahead for a whole page (see app/api/prefetch.py).
RESOURCE_LISTS: Lists = {
    "dependencies": ListField(
        _hop_key(edges.Direction.DEPENDENCIES), _load_hops, connection_nodes, ("edges", "node")
    ),
    "dependents": ListField(
        _hop_key(edges.Direction.DEPENDENTS), _load_hops, connection_nodes, ("edges", "node")
    ),
    "blastRadius": ListField(
        _blast_key,
        _load_blasts,
        lambda c: [edge.node.resource for edge in c.edges],
        ("edges", "node", "resource"),
    ),
}


async def prefetch_resources(
    info: Info, page: Page[Any], after: str | None
) -> Connection[Resource]:
    """The connection of a page of resource rows, their list fields filled ahead."""
    found = connection(page, resources_of(page.rows), after=after)
    await prefetch_below(info, connection_nodes(found), ("edges", "node"), RESOURCE_LISTS)
    return found


def state_of(r: Row) -> State:
    return State(
        id=str(r["state_id"]),
        state_id=r["state_id"],
        name=r["state_name"],
        kind=queries.StateKind(r["state_kind"]),
        lineage=r["state_lineage"],
        created_at=r["state_created_at"],
    )


def version_of(r: Row, state: State | None = None) -> StateVersion:
    return StateVersion(
        id=str(r["version_id"]),
        version_id=r["version_id"],
        serial=r["serial"],
        lineage=r["version_lineage"],
        terraform_version=r["terraform_version"],
        created_at=r["version_created_at"],
        created_by=r["version_created_by"],
        encrypted=r["version_encrypted"],
        state=state or state_of(r),
    )


# A Resource's attributes not read with its row (resources.ROW_COLUMNS); or its index key
# and sensitive paths, read for a blast radius page only when shown (_JSON_FIELDS).
UNLOADED: Any = object()


def _resource_of(record: Row) -> Resource:
    return resources_of([record])[0]


# A mode by its value: a dict look-up where Mode(value), an enum call, costs ten times more
# (a page of a thousand resources builds a thousand).
_MODES = {mode.value: mode for mode in ResourceMode}


def resources_of(records: Iterable[Row], at: StateVersion | None = None) -> list[Resource]:
    """Resources of rows with RESOURCE_COLUMNS; rows of one version share its objects.
    With `at`: rows with ROW_COLUMNS (and maybe JSON_COLUMNS and attributes), all at
    that version."""
    versions: dict[UUID, StateVersion] = {}
    built = []
    for r in records:
        version = at or versions.get(r["version_id"])
        if version is None:
            version = versions[r["version_id"]] = version_of(r)
        built.append(
            Resource(
                id=f"{r['id']}:{version.version_id}",
                resource_id=r["id"],
                address=r["address"],
                mode=_MODES[r["mode"]],
                type=r["type"],
                name=r["name"],
                provider=r["provider"],
                module=r["module_path"],
                index_key=r.get("index_key", UNLOADED),
                each=r["each"],
                deposed=r["deposed"],
                status=r["status"],
                sensitive_attributes=r.get("sensitive_attributes", UNLOADED),
                raw_attributes=r.get("attributes", UNLOADED),
                state=version.state,
                version=version,
            )
        )
    return built


def event_of(r: Row) -> Event:
    return Event(
        id=str(r["id"]),
        state_name=r["state_name"],
        action=r["action"],
        actor=r["actor"],
        serial=r["serial"],
        detail=r["detail"],
        created_at=r["created_at"],
    )


def blast_arguments(
    direction: edges.Direction,
    max_depth: int | None,
    first: int | None,
    after: str | None,
    cross_states: bool,
) -> dict[str, Any]:
    """A blast radius's arguments by GraphQL name, as the prefetch keys them (the root
    field and Resource.blastRadius share one loader)."""
    return {
        "direction": direction,
        "maxDepth": max_depth,
        "first": first,
        "after": after,
        "crossStates": cross_states,
    }
