"""The states map in headless Chromium (every other host blocked), on a live server with
50 states reading each other's outputs: every state and link drawn, no two boxes on
each other at 1024, 1440 and 2560 px, and a producer's write marks its consumers stale
on the open page, without a reload."""

import re
from collections.abc import AsyncIterator, Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from bench.browser import Offline, chromium, offline_page
from tests.helpers.dashboard import BOXES
from tests.helpers.links import estate, linked
from tests.helpers.live_server import LiveServer, live_server

pytestmark = [
    pytest.mark.slow,  # a browser, seconds a page
    pytest.mark.skipif(chromium() is None, reason="chromium is not installed"),
]

USER, TOKEN = "viewer", "map-secret"
WIDTHS = [1024, 1440, 2560]
READS = estate(50)
LINKS = sum(len(producers) for producers in READS.values())

# the map's boxes: every pair of state boxes apart
SVG_BOXES = """() => {
  const rects = [...document.querySelectorAll('#map g.node rect')].map(
    r => r.getBoundingClientRect());
  const crossing = [];
  for (let i = 0; i < rects.length; i++) for (let j = i + 1; j < rects.length; j++) {
    const a = rects[i], b = rects[j];
    const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
    const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    if (w > 0.5 && h > 0.5) crossing.push([i, j]);
  }
  return {count: rects.length, crossing, narrowest: Math.min(...rects.map(r => r.width))};
}"""


@pytest.fixture(scope="module")
def server(database_url: str, emptied: None) -> Iterator[LiveServer]:
    env = {
        "INFRAGRAPH_API_TOKENS": f"{USER}:{TOKEN}",
        # the data sources' backend address (tests/helpers/links.py): this server
        "INFRAGRAPH_PUBLIC_URLS": "https://infragraph.example/tf",
    }
    with live_server(database_url, env, timeout=90) as running:  # a busy machine starts slowly
        with httpx.Client(
            base_url=running.url, auth=(USER, TOKEN), headers={"Content-Type": "application/json"}
        ) as http:
            for name, producers in READS.items():
                http.post(f"/states/{name}", content=linked(name, producers)).raise_for_status()
        yield running
        assert not running.server_errors(), running.log()


async def _browse(server: LiveServer, width: int) -> AsyncIterator[Offline]:
    async with offline_page(server.url, (USER, TOKEN), width=width) as offline:
        response = await offline.page.goto(f"{server.url}/ui/map")
        assert response is not None and response.status == 200
        yield offline
    assert offline.blocked == []
    assert all(urlsplit(url).netloc == urlsplit(server.url).netloc for url in offline.requested)


@pytest.fixture(params=WIDTHS)
async def sized(request: pytest.FixtureRequest, server: LiveServer) -> AsyncIterator[Offline]:
    async for offline in _browse(server, request.param):
        yield offline


@pytest.fixture
async def browser(server: LiveServer) -> AsyncIterator[Offline]:
    async for offline in _browse(server, 1440):
        yield offline


async def test_no_two_elements_of_the_map_overlap(sized) -> None:
    page = sized.page
    assert await page.locator("#map g.node").count() == len(READS)
    drawn = await page.evaluate(SVG_BOXES)
    assert drawn["count"] == len(READS) and drawn["crossing"] == []
    assert drawn["narrowest"] > 100  # laid out and drawn, not only in the markup
    measured = await page.evaluate(BOXES)
    assert measured["count"] > LINKS  # the links table's cells among them
    assert measured["crossing"] == []
    assert measured["spilling"] == []


async def test_a_producer_write_marks_its_consumers_stale_without_a_reload(browser, server) -> None:
    page = browser.page
    assert await page.locator("#map g.link").count() == LINKS
    assert await page.locator('#map g.node[data-stale="true"]').count() == 0
    await page.wait_for_selector("#live.on")  # subscribed to events
    await page.evaluate("window.sameDocument = true")  # gone if the page reloads
    readers = sorted(c for c, producers in READS.items() if "core/1" in producers)
    async with httpx.AsyncClient(
        base_url=server.url, auth=(USER, TOKEN), headers={"Content-Type": "application/json"}
    ) as http:
        changed = linked("core/1", [], version=2)
        (await http.post("/states/core/1", content=changed)).raise_for_status()
    stale = page.locator('#map g.node[data-stale="true"]')
    await page.locator(f'#map g.node[data-state="{readers[0]}"][data-stale="true"]').wait_for(
        timeout=10_000
    )
    assert await page.evaluate("window.sameDocument") is True
    names = await stale.evaluate_all("nodes => nodes.map(n => n.dataset.state)")
    assert sorted(names) == readers
    lines = await page.locator('#map g.link[data-stale="true"]').evaluate_all(
        "lines => lines.map(l => [l.dataset.producer, l.dataset.consumer])"
    )
    assert sorted(map(tuple, lines)) == [("core/1", c) for c in readers]
    assert await page.locator("#links tr[data-stale=true]").count() == len(readers)
    assert await stale.first.locator("text.mark").text_content() == "stale"
    await stale.first.click()  # a state is a link to its page
    await page.wait_for_url(re.compile(r"/ui/state\?name="))
    assert (await page.locator("h1").first.inner_text()).startswith(names[0])
