"""Filling list fields ahead of their resolvers.

A resolver returning a page of items looks at what the query selects on
them; for each list field there (say `dependents(first: 5)` on every
resource of the page) it loads the values of all the items at once (one
statement through the loaders), stores each on its item under the key the
field's resolver will compute, and goes on below. The field's resolver,
called once per item, then answers synchronously from memory: an async
resolver per item costs Strawberry tens of microseconds each.

Anything not filled ahead (arguments read differently, a field reached
another way) falls back to loading on demand: same result, slower.
"""

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from graphql import GraphQLError

from app.api.context import Info
from app.api.runtime.lookahead import Selected, descend, selected_below, selected_here
from app.errors import AppError


class Prefetching(Protocol):
    prefetched: dict[Hashable, Any]  # list field key -> its value


@dataclass(frozen=True)
class ListField:
    """A list field whose values a parent can load for many items at once."""

    # (the field's arguments (GraphQL names), the field as selected (lookahead.descend
    # finds what it selects)) -> the key its resolver looks up
    key: Callable[[Mapping[str, Any], list[Selected]], Hashable]
    # (info, items, key, `after` as sent) -> one value per item
    load: Callable[[Info, list[Any], Any, str | None], Awaitable[list[Any]]]
    # the items inside a value, whose own fields come next
    items: Callable[[Any], list[Any]]
    # the field names from this field to those items (`edges`, `node`)
    path: tuple[str, ...]


Lists = Mapping[str, ListField]


async def prefetch(info: Info, items: list[Any], fields: list[Selected], lists: Lists) -> None:
    """Fill, on every one of `items`, the fields among `fields` that `lists` knows."""
    if items:
        await asyncio.gather(*(_fill(info, items, f, lists) for f in fields if f.name in lists))


async def prefetch_below(info: Info, items: list[Any], path: tuple[str, ...], lists: Lists) -> None:
    """`prefetch` for the items a resolver returns, found at `path` below its field."""
    await prefetch(info, items, selected_below(info, path), lists)


async def _fill(info: Info, items: list[Any], field: Selected, lists: Lists) -> None:
    spec = lists[field.name]
    try:
        key = spec.key(field.arguments, [field])
        values = await spec.load(info, items, key, field.arguments.get("after"))
    except (AppError, GraphQLError):
        return  # bad arguments: each item's resolver reports them
    below: list[Any] = []
    for item, value in zip(items, values, strict=True):
        item.prefetched[key] = value
        below.extend(spec.items(value))
    await prefetch(info, below, descend([field], spec.path), lists)


def resolve(
    info: Info, item: Prefetching, spec: ListField, arguments: Mapping[str, Any], lists: Lists
) -> Any:
    """A list field's value for one item: from memory when filled ahead (synchronously),
    else an awaitable loading it (graphql-core awaits what a resolver returns)."""
    key = spec.key(arguments, selected_here(info))
    found = item.prefetched.get(key)
    return found if found is not None else _load_one(info, item, spec, key, arguments, lists)


async def _load_one(
    info: Info, item: Any, spec: ListField, key: Any, arguments: Mapping[str, Any], lists: Lists
) -> Any:
    [value] = await spec.load(info, [item], key, arguments.get("after"))
    await prefetch_below(info, spec.items(value), spec.path, lists)
    return value
