"""Cursor connections (Relay style) over keyset pages, for every list that can grow.

A cursor is the key of a row (base64 of a JSON array), so the next page
starts after it with an index-friendly comparison instead of an offset.
"""

import base64
import binascii
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar
from uuid import UUID

import strawberry

from app import jsonutil
from app.errors import BadInput, LimitExceeded
from app.paging import Keyset, Page

T = TypeVar("T")

DEFAULT_FIRST = 100
MAX_FIRST = 1000
_BIGINT = 2**63

FirstArg = Annotated[
    int | None,
    strawberry.argument(
        description=f"How many items (default {DEFAULT_FIRST}, at most {MAX_FIRST})."
    ),
]
AfterArg = Annotated[
    str | None,
    strawberry.argument(description="The `endCursor` (or an edge's `cursor`) to continue after."),
]


@strawberry.type
class PageInfo:
    has_next_page: bool
    has_previous_page: bool
    start_cursor: str | None
    end_cursor: str | None


@strawberry.type
class Edge(Generic[T]):
    node: T
    key: strawberry.Private[tuple[Any, ...]]  # the row's key, encoded only when selected

    @strawberry.field
    def cursor(self) -> str:
        return encode_cursor(self.key)


@strawberry.type
class Connection(Generic[T]):
    edges: list[Edge[T]]
    page_info: PageInfo
    # None: not counted, which a list does only when totalCount is not selected
    total: strawberry.Private[int | None]

    @strawberry.field(description="The size of the whole list, all pages.")
    def total_count(self) -> int:
        if self.total is None:
            raise AssertionError("a page counted without its total: select-aware code is wrong")
        return self.total


@dataclass(frozen=True)
class PageArgs:
    """A validated `first`/`after`: what loaders batch by."""

    first: int
    after: tuple[Any, ...] | None


def page_args(first: int | None, after: str | None, keyset: Keyset) -> PageArgs:
    if first is None:
        first = DEFAULT_FIRST
    if first < 0:
        raise BadInput(f"first must not be negative, got {first}")
    if first > MAX_FIRST:
        raise LimitExceeded(f"first must be at most {MAX_FIRST}, got {first}", {"max": MAX_FIRST})
    return PageArgs(first, decode_cursor(after, keyset) if after is not None else None)


def encode_cursor(key: tuple[Any, ...]) -> str:
    values = [str(v) if isinstance(v, UUID) else v for v in key]
    return base64.urlsafe_b64encode(jsonutil.dumps(values)).decode()


def decode_cursor(cursor: str, keyset: Keyset) -> tuple[Any, ...]:
    """The key in a cursor, checked against the list's key types (it comes from a client)."""
    try:
        values = jsonutil.read(base64.urlsafe_b64decode(cursor.encode()))
    except (jsonutil.JsonInputError, binascii.Error, UnicodeEncodeError):
        values = None
    if not isinstance(values, list) or len(values) != len(keyset.types):
        raise BadInput("invalid cursor: pass back a cursor this list returned", {"after": cursor})
    return tuple(
        _typed(value, kind, cursor) for value, kind in zip(values, keyset.types, strict=True)
    )


def _typed(value: Any, kind: type, cursor: str) -> Any:
    if kind is int and isinstance(value, int) and not isinstance(value, bool):
        if -_BIGINT <= value < _BIGINT:
            return value
    elif kind is str and isinstance(value, str):
        return value
    elif kind is UUID and isinstance(value, str):
        try:
            return UUID(value)
        except ValueError:
            pass
    raise BadInput("invalid cursor: pass back a cursor this list returned", {"after": cursor})


def connection(page: Page[Any], nodes: list[T], *, after: str | None) -> Connection[T]:
    """The connection of a page whose rows became `nodes` (same order)."""
    edges = [Edge(node=node, key=key) for key, node in zip(page.keys, nodes, strict=True)]
    return Connection(
        edges=edges,
        page_info=PageInfo(
            has_next_page=page.has_next,
            has_previous_page=after is not None,
            start_cursor=encode_cursor(edges[0].key) if edges else None,
            end_cursor=encode_cursor(edges[-1].key) if edges else None,
        ),
        total=page.total,
    )


def connection_nodes(found: Connection[T]) -> list[T]:
    return [edge.node for edge in found.edges]
