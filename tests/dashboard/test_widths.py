"""The dashboard at 1024, 1440 and 2560 px wide in headless Chromium (every other host
blocked): long provider, module and state names wrap or shorten instead of drawing one
table over another, and addresses read in Terraform's order."""

import re
from collections.abc import AsyncIterator, Iterator
from urllib.parse import urlencode, urlsplit

import httpx
import pytest

from app.tfstate.human_order import address_order
from bench.browser import Offline, chromium, offline_page
from tests.helpers.dashboard import BOXES
from tests.helpers.live_server import LiveServer, live_server
from tests.helpers.states import resource, state

pytestmark = [
    pytest.mark.slow,  # a browser, seconds a page
    pytest.mark.skipif(chromium() is None, reason="chromium is not installed"),
]

USER, TOKEN = "viewer", "w-secret"
WIDTHS = [1024, 1440, 2560]
LONG_MODULE = "module.network_" + "segmentation_" * 4 + "primary"
LONG_STATE = "platform/" + "shared-services-" * 5 + "prod"


@pytest.fixture(scope="module")
def server(database_url: str, emptied: None) -> Iterator[LiveServer]:
    long_provider = 'provider["registry.terraform.io/some-long-namespace/enterprise-networking"]'
    counted = state(
        [
            resource("aws_vpc", "main"),
            resource("aws_subnet", "x", keys=list(range(120)), depends_on=["aws_vpc.main"]),
            resource("aws_subnet", "y", keys=["b10", "b2", "a"], depends_on=["aws_vpc.main"]),
            resource("ent_segment", "edge", provider=long_provider, module=LONG_MODULE),
        ]
    )
    with live_server(database_url, {"INFRAGRAPH_API_TOKENS": f"{USER}:{TOKEN}"}) as running:
        with httpx.Client(
            base_url=running.url, auth=(USER, TOKEN), headers={"Content-Type": "application/json"}
        ) as http:
            http.post("/states/counted", content=counted).raise_for_status()
            http.post(f"/states/{LONG_STATE}", content=counted).raise_for_status()
        yield running
        assert not running.server_errors(), running.log()


@pytest.fixture(params=WIDTHS)
async def browser(request: pytest.FixtureRequest, server: LiveServer) -> AsyncIterator[Offline]:
    async with offline_page(server.url, (USER, TOKEN), width=request.param) as offline:
        yield offline
    assert offline.blocked == []
    assert all(urlsplit(url).netloc == urlsplit(server.url).netloc for url in offline.requested)


async def _open(browser: Offline, server: LiveServer, path: str, **params: object) -> None:
    url = f"{server.url}{path}" + (f"?{urlencode(params)}" if params else "")
    response = await browser.page.goto(url)
    assert response is not None and response.status == 200


async def test_no_two_elements_of_the_inventory_page_overlap(browser, server) -> None:
    await _open(browser, server, "/ui/inventory")
    measured = await browser.page.evaluate(BOXES)
    assert measured["count"] > 20
    assert measured["crossing"] == []
    assert measured["spilling"] == []
    titles = await browser.page.locator("#by-provider td.key span").evaluate_all(
        "spans => spans.map(s => s.title)"
    )
    assert any("enterprise-networking" in t for t in titles)


async def test_lists_and_picture_follow_terraform_order(browser, server) -> None:
    await _open(browser, server, "/ui/state", name="counted")
    listed = await browser.page.locator("#resources tbody tr td:first-child a").all_inner_texts()
    assert listed[:3] == ["aws_subnet.x[0]", "aws_subnet.x[1]", "aws_subnet.x[2]"]
    assert listed == sorted(listed, key=address_order)
    await _open(browser, server, "/ui/resource", state="counted", address="aws_vpc.main")
    dependents = await browser.page.locator("#dependents a").all_inner_texts()
    assert len(dependents) == 100 and dependents == sorted(dependents, key=address_order)
    groups = await browser.page.locator('#radius g.group[data-depth="1"]').evaluate_all(
        "nodes => nodes.map(n => n.dataset.group)"
    )
    assert groups == ["aws_subnet.x", "aws_subnet.y"]  # 123 members: grouped, in order
    await browser.page.locator('#radius g.group[data-group="aws_subnet.x"]').click()
    await browser.page.wait_for_url(re.compile(r"expand=aws_subnet\.x"))  # drawn one by one
    drawn = await browser.page.locator('#radius g.node[data-depth="1"][data-address]').evaluate_all(
        "nodes => nodes.map(n => n.dataset.address)"
    )
    assert len(drawn) == 60 and drawn == sorted(drawn, key=address_order)
    assert drawn[:3] == ["aws_subnet.x[0]", "aws_subnet.x[1]", "aws_subnet.x[2]"]
