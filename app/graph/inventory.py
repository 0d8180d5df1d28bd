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
    # the source of the module call it is in, by its state's latest configuration
    # (app/configuration/): "" in the root module, "(unknown)" where none says
    MODULE_SOURCE = "module_source"


_KEY = {
    GroupBy.TYPE: "r.type",
    GroupBy.PROVIDER: "r.provider",
    GroupBy.STATE: "s.name",
    GroupBy.MODULE: "coalesce(r.module_path, '')",
    GroupBy.MODULE_SOURCE: """CASE WHEN coalesce(r.module_path, '') = '' THEN ''
        ELSE coalesce((SELECT m.source FROM state_configurations sc
                       JOIN configuration_modules m ON m.configuration_id = sc.configuration_id
                       WHERE sc.state_id = s.id AND m.key = config_address(r.module_path)),
                      '(unknown)') END""",
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
