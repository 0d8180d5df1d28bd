"""Global ids of the graph's node types, and the `resolve_nodes` they share."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar
from uuid import UUID

from strawberry.dataloader import DataLoader

from app.api.context import Info
from app.errors import BadInput
from app.graph import events, resources

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
