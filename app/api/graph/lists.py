"""The list fields of a resource (dependencies, dependents, blastRadius), filled ahead
for a whole page of resources at once (see app/api/runtime/prefetch.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from app.api.context import Info
from app.api.graph import rows
from app.api.graph.columns import blast_key
from app.api.graph.loaders import Blast, Hop
from app.api.pagination import Connection, connection, connection_nodes, page_args
from app.api.runtime.lookahead import Selected
from app.api.runtime.prefetch import ListField, Lists, prefetch_below
from app.graph import edges
from app.paging import Page

if TYPE_CHECKING:
    from app.api.graph.blast import BlastRadiusConnection
    from app.api.graph.resource import Resource


def _hop_key(direction: edges.Direction) -> Callable[[Mapping[str, Any], list[Selected]], Hop]:
    def key(arguments: Mapping[str, Any], selected: list[Selected]) -> Hop:
        first, after = arguments.get("first"), arguments.get("after")
        direct = bool(arguments.get("direct"))
        return Hop(direction, page_args(first, after, edges.NEIGHBOUR_KEY), direct)

    return key


async def _load_hops(
    info: Info, owners: list[Resource], key: Hop, after: str | None
) -> list[Connection[Resource]]:
    pages = await info.context.graph.neighbours.load_many([(o.key, key) for o in owners])
    return [connection(page, rows.resources_of(page.rows), after=after) for page in pages]


async def _load_blasts(
    info: Info, owners: list[Resource], key: Blast, after: str | None
) -> list[BlastRadiusConnection]:
    roots = [(o.key, key) for o in owners]
    pages = await info.context.graph.blast_radius.load_many(roots)
    return [
        rows.blast_connection(page, after, None if key.cross_states else o.version)
        for page, o in zip(pages, owners, strict=True)
    ]


RESOURCE_LISTS: Lists = {
    "dependencies": ListField(
        _hop_key(edges.Direction.DEPENDENCIES), _load_hops, connection_nodes, ("edges", "node")
    ),
    "dependents": ListField(
        _hop_key(edges.Direction.DEPENDENTS), _load_hops, connection_nodes, ("edges", "node")
    ),
    "blastRadius": ListField(
        blast_key,
        _load_blasts,
        lambda c: [edge.node.resource for edge in c.edges],
        ("edges", "node", "resource"),
    ),
}


async def prefetch_resources(
    info: Info, page: Page[Any], after: str | None
) -> Connection[Resource]:
    """The connection of a page of resource rows, their list fields filled ahead."""
    found = connection(page, rows.resources_of(page.rows), after=after)
    await prefetch_below(info, connection_nodes(found), ("edges", "node"), RESOURCE_LISTS)
    return found
