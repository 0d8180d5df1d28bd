"""Addresses on the dashboard's pages in Terraform's order: count indexes as numbers,
for_each keys as text, whatever order the store pages them in."""

import html as markup
import re

import asyncpg

from app.graph.write.version import write_version
from app.tfstate.human_order import address_order
from tests.helpers.dashboard import page
from tests.helpers.states import resource, state

COUNT = 120
KEYS = ["b10", "b2", "a", "c"]


def _counted() -> bytes:
    return state(
        [
            resource("aws_vpc", "main", attributes={"id": "vpc-1"}),
            resource("aws_subnet", "x", keys=list(range(COUNT)), depends_on=["aws_vpc.main"]),
            resource("aws_subnet", "y", keys=KEYS, depends_on=["aws_vpc.main"]),
        ]
    )


def _in_order(addresses: list[str]) -> bool:
    return addresses == sorted(addresses, key=address_order)


async def test_state_resources_dependents_and_picture_follow_terraform_order(
    client, conn: asyncpg.Connection
) -> None:
    await write_version(conn, "counted", _counted(), actor="ci")
    listed = re.findall(
        r"<tr><td><a href=\"/ui/resource[^>]+>([^<]+)</a>",
        await page(client, "/ui/state", {"name": "counted"}),
    )
    listed = [markup.unescape(a) for a in listed]
    assert len(listed) == 100 and _in_order(listed)
    assert listed[:3] == ["aws_subnet.x[0]", "aws_subnet.x[1]", "aws_subnet.x[2]"]

    html = await page(client, "/ui/resource", {"state": "counted", "address": "aws_vpc.main"})
    dependents = re.search(r'<ul id="dependents">(.*?)</ul>', html, re.S)
    assert dependents
    shown = [markup.unescape(a) for a in re.findall(r">([^<]+)</a>", dependents.group(1))]
    assert len(shown) == 100 and _in_order(shown)
    groups = re.findall(r'data-depth="1" data-group="([^"]+)"', html)
    assert groups == ["aws_subnet.x", "aws_subnet.y"]  # 124 members: grouped, in order
    expand = {"expand": ["aws_subnet.x", "aws_subnet.y"]}
    html = await page(
        client, "/ui/resource", {"state": "counted", "address": "aws_vpc.main", **expand}
    )
    nodes = re.findall(r'<g class="node" data-depth="1" data-address="([^"]+)"', html)
    drawn = [markup.unescape(a) for a in nodes]
    assert len(drawn) == 60 and _in_order(drawn)
    assert drawn[:3] == ["aws_subnet.x[0]", "aws_subnet.x[1]", "aws_subnet.x[2]"]


async def test_the_favicon_is_an_svg(client) -> None:
    response = await client.get("/favicon.ico")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("image/svg+xml")
    assert response.text.startswith("<svg")
