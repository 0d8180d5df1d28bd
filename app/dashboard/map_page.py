"""The dashboard's states map: the states that read or are read by another through
terraform_remote_state (their current versions), the links between them, and which
consumers are stale (app/graph/links.py decides: an output a consumer read has another
value in its producer's current version). A fixed number of statements, whatever the
map holds; only the links between states the caller may read."""

from dataclasses import dataclass
from typing import Any

import asyncpg

from app.access import Principal
from app.dashboard.map_layout import Link, StatesMap, states_map
from app.graph import links


@dataclass(frozen=True)
class MapPage:
    picture: StatesMap
    links: list[dict[str, Any]]  # app.graph.links.read_links' rows: by consumer, address

    @property
    def stale(self) -> list[str]:
        """The stale consumers, by name."""
        return sorted({link["consumer_name"] for link in self.links if link["stale"]})


async def map_page(conn: asyncpg.Connection, caller: Principal) -> MapPage:
    found = await links.read_links(conn, readable=caller.patterns)
    drawn = [
        Link(
            link["producer_name"],
            link["consumer_name"],
            link["address"],
            tuple(output["name"] for output in link["outputs"]),
            link["stale"],
        )
        for link in found
    ]
    return MapPage(states_map([], drawn), found)
