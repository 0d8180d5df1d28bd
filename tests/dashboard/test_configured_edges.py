"""The blast radius picture of a configured state draws references and depends_on
edges apart; an unconfigured one draws plain edges."""

import re

import asyncpg
import httpx

from app.configuration.parse import parse_configuration
from app.configuration.store import PUSH, record_configuration
from app.graph.write.version import write_version
from tests.helpers.configurations import network, network_state


async def _lines(client: httpx.AsyncClient, address: str) -> list[str]:
    response = await client.get("/ui/resource", params={"state": "team/net", "address": address})
    assert response.status_code == 200
    svg = re.search(r'<svg id="radius".*?</svg>', response.text, re.S)
    assert svg
    return re.findall(r'<line [^>]*class="([^"]+)"', svg.group(0))


async def test_references_and_depends_on_are_drawn_apart(
    client: httpx.AsyncClient, conn: asyncpg.Connection
) -> None:
    await write_version(conn, "team/net", network_state(), actor="ci")
    assert set(await _lines(client, "aws_vpc.main")) == {"edge"}
    await record_configuration(
        conn, "team/net", parse_configuration(network()), origin=PUSH, submitter="ci"
    )
    lines = await _lines(client, "aws_vpc.main")
    # vpc -> subnet, instance, the two buckets: references; instance -> logs: depends_on
    assert lines.count("edge implicit") == 4 and lines.count("edge explicit") == 1, lines
