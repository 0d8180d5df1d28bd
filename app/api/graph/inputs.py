"""What a caller sends the graph's fields: its enums, filters and shared arguments."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import strawberry
from strawberry.scalars import JSON

from app.access import Principal
from app.graph import edges, inventory, queries, resources

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
