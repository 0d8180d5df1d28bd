"""A page of a blast radius (the rows of its pages: rows.blast_connection)."""

from __future__ import annotations

import strawberry

from app.api.graph.refs import ResourceRef
from app.api.pagination import Connection


@strawberry.type
class BlastRadiusNode:
    resource: ResourceRef
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
