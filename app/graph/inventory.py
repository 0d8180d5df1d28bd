"""Inventory: how many resource instances, grouped, across the current versions."""

import enum

import asyncpg

from app.graph.resources import (
    CURRENT_SCOPE,
    NO_FILTER,
    Params,
    ResourceFilter,
    filter_conditions,
)


class GroupBy(enum.Enum):
    TYPE = "type"
    PROVIDER = "provider"
    STATE = "state"
    MODULE = "module"  # the root module's key is ""


_KEY = {
    GroupBy.TYPE: "r.type",
    GroupBy.PROVIDER: "r.provider",
    GroupBy.STATE: "s.name",
    GroupBy.MODULE: "coalesce(r.module_path, '')",
}


async def inventory(
    conn: asyncpg.Connection, group_by: GroupBy, f: ResourceFilter = NO_FILTER
) -> list[asyncpg.Record]:
    """(key, count) rows, largest count first, then by key."""
    arg = Params()
    return await conn.fetch(
        f"""SELECT {_KEY[group_by]} COLLATE "C" AS key, count(*) AS count
            FROM {CURRENT_SCOPE} WHERE {filter_conditions(f, arg)}
            GROUP BY 1 ORDER BY 2 DESC, 1""",
        *arg,
    )
