"""The dashboard in headless Chromium, with the API tokens on and every request to
another host blocked: each page renders its data and nothing leaves the server."""

import re
from collections.abc import AsyncIterator, Iterator
from urllib.parse import urlencode, urlsplit

import httpx
import pytest
from playwright.async_api import Error as PlaywrightError

from app.dashboard.pages import DRAWN_PER_LAYER
from bench.browser import Offline, chromium, offline_page
from tests.helpers.live_server import LiveServer, live_server
from tests.helpers.states import resource, shared_history, state

pytestmark = [
    pytest.mark.slow,  # a browser, seconds a page
    pytest.mark.skipif(chromium() is None, reason="chromium is not installed"),
]

USER, TOKEN = "viewer", "v-secret"
SPOKES = DRAWN_PER_LAYER + 5
LOCK = {"ID": "lock-77", "Who": "dana@ci", "Operation": "OperationTypeApply", "Info": ""}


@pytest.fixture(scope="module")
def server(database_url: str, emptied: None) -> Iterator[LiveServer]:
    with live_server(database_url, {"INFRAGRAPH_API_TOKENS": f"{USER}:{TOKEN}"}) as running:
        with httpx.Client(
            base_url=running.url, auth=(USER, TOKEN), headers={"Content-Type": "application/json"}
        ) as http:
            for body in shared_history():
                http.post("/states/ui/net", content=body).raise_for_status()
            hub = state(
                [
                    resource("aws_vpc", "main"),
                    resource(
                        "aws_subnet", "s", keys=list(range(SPOKES)), depends_on=["aws_vpc.main"]
                    ),
                ]
            )
            http.post("/states/ui/hub", content=hub).raise_for_status()
            http.request("LOCK", "/states/ui/hub", json=LOCK).raise_for_status()
        yield running
        assert not running.server_errors(), running.log()


@pytest.fixture
async def browser(server: LiveServer) -> AsyncIterator[Offline]:
    async with offline_page(server.url, (USER, TOKEN)) as offline:
        yield offline
    assert offline.blocked == []
    assert all(urlsplit(url).netloc == urlsplit(server.url).netloc for url in offline.requested)
    assert all(urlsplit(url).netloc == urlsplit(server.url).netloc for url in offline.sockets)


async def _open(browser: Offline, server: LiveServer, path: str, **params: object) -> str:
    url = f"{server.url}{path}" + (f"?{urlencode(params)}" if params else "")
    response = await browser.page.goto(url)
    assert response is not None and response.status == 200
    return await browser.page.content()


async def test_overview_shows_states_serials_lock_holder_and_events(browser, server) -> None:
    await _open(browser, server, "/")
    page = browser.page
    names = await page.locator("#states tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.state)"
    )
    assert names == ["ui/hub", "ui/net"]
    assert await page.locator('tr[data-state="ui/net"] .serial').inner_text() == "6"
    assert "dana@ci" in await page.locator('tr[data-state="ui/hub"] .lock').inner_text()
    assert await page.locator("#events li").count() >= 8  # 6 + 1 writes, 1 lock
    stylesheet = await page.evaluate("getComputedStyle(document.body).fontFamily")
    assert "system-ui" in stylesheet  # the server's own stylesheet applied


async def test_the_overview_follows_locks_and_writes_live(browser, server) -> None:
    await _open(browser, server, "/")
    page = browser.page
    await page.wait_for_selector("#live.on")  # subscribed to events
    await page.evaluate("window.sameDocument = true")  # gone if the page reloads
    row = page.locator('tr[data-state="ui/live"]')
    assert await row.count() == 0
    totals = page.locator("#totals b")

    async def counted() -> list[int]:
        return [int(t.replace(",", "")) for t in await totals.all_inner_texts()]

    before = await counted()
    lock = {"ID": "live-1", "Who": "erin@laptop", "Operation": "OperationTypeApply"}
    async with httpx.AsyncClient(
        base_url=server.url, auth=(USER, TOKEN), headers={"Content-Type": "application/json"}
    ) as http:
        (await http.post("/states/ui/live", content=shared_history()[0])).raise_for_status()
        await row.locator(".serial", has_text="1").wait_for(timeout=5000)
        assert await row.locator(".writer").inner_text() == USER
        # its kind and count as a reload would show them, in the list's order
        asked = await http.post(
            "/graphql",
            json={"query": '{ state(name: "ui/live") { currentVersion { resourceCount } } }'},
        )
        resources = asked.json()["data"]["state"]["currentVersion"]["resourceCount"]
        await row.locator("td", has_text="terraform").wait_for(timeout=5000)
        await row.locator("td.num", has_text=str(resources)).first.wait_for(timeout=5000)
        names = await page.locator("#states tbody tr[data-state]").evaluate_all(
            "rows => rows.map(r => r.dataset.state)"
        )
        assert names == sorted(names) and "ui/live" in names
        assert await counted() == [before[0] + 1, before[1] + resources, before[2]]
        (await http.request("LOCK", "/states/ui/live", json=lock)).raise_for_status()
        await row.locator(".lock", has_text="erin@laptop").wait_for(timeout=5000)
        assert await counted() == [before[0] + 1, before[1] + resources, before[2] + 1]
        (await http.request("UNLOCK", "/states/ui/live", json=lock)).raise_for_status()
        await row.locator(".lock:empty").wait_for(timeout=5000)
        assert await counted() == [before[0] + 1, before[1] + resources, before[2]]
    await page.locator("#events li", has_text="ui/live #1").wait_for(timeout=5000)
    assert await page.evaluate("window.sameDocument") is True


async def test_state_page_shows_versions_and_the_diff_of_two(browser, server) -> None:
    await _open(browser, server, "/ui/state", name="ui/net", **{"from": 2, "to": 3})
    page = browser.page
    serials = await page.locator("#versions tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.serial)"
    )
    assert serials == ["6", "5", "4", "3", "2", "1"]
    diff = await page.locator("#diff").inner_text()
    assert "+ aws_eip.ip" in diff and "1 added, 0 changed, 0 removed" in diff
    assert await page.locator("#outputs").inner_text() != "none"


async def test_resource_page_shows_history_and_the_radius_as_an_svg(browser, server) -> None:
    await _open(browser, server, "/ui/resource", state="ui/net", address='aws_instance.web["x"]')
    page = browser.page
    assert await page.locator("#history tbody tr").count() == 2
    await _open(browser, server, "/ui/resource", state="ui/hub", address="aws_vpc.main")
    group = page.locator('#radius g.group[data-depth="1"]')  # a big depth: grouped
    assert await group.get_attribute("data-members") == str(SPOKES)
    assert await group.locator("text").text_content() == f"aws_subnet.s x {SPOKES}"
    await group.click()  # expands: its members drawn, one by one
    await page.wait_for_url(re.compile(r"expand=aws_subnet\.s"))
    drawn = page.locator('#radius g.node[data-address][data-depth="1"]')
    assert await drawn.count() == DRAWN_PER_LAYER
    more = page.locator("#radius g.more")
    assert await more.get_attribute("data-more") == str(SPOKES - DRAWN_PER_LAYER)
    box = await drawn.first.bounding_box()
    assert box and box["width"] > 100  # laid out and drawn, not only in the markup
    await drawn.first.click()  # a node is a link to its resource
    await page.wait_for_url(re.compile(r"/ui/resource\?.*aws_subnet\.s%5B0%5D"))
    assert await page.locator("h1").inner_text() == "aws_subnet.s[0]"


async def test_inventory_and_iac_pages_render(browser, server) -> None:
    await _open(browser, server, "/ui/inventory", type="aws_vpc")
    assert "ui/hub" in await browser.page.locator("#found").inner_text()
    assert "aws_subnet" in await browser.page.locator("#by-type").inner_text()
    await _open(browser, server, "/ui/iac")
    assert await browser.page.locator("h1").inner_text() == "IaC scopes"


async def test_force_unlock_releases_the_lock_through_the_backend(browser, server) -> None:
    await _open(browser, server, "/ui/state", name="ui/hub")
    page = browser.page
    assert await page.locator("#lock-holder").inner_text() == "dana@ci"
    page.once("dialog", lambda dialog: dialog.accept())
    async with page.expect_navigation():
        await page.locator("#force-unlock").click()
    assert "Not locked." in await page.locator("#lock").inner_text()
    async with httpx.AsyncClient(
        base_url=server.url, auth=(USER, TOKEN), headers={"Content-Type": "application/json"}
    ) as http:
        query = '{ events(state: "ui/hub", first: 1) { edges { node { action actor } } } }'
        body = (await http.post("/graphql", json={"query": query})).json()
    [edge] = body["data"]["events"]["edges"]
    assert edge["node"] == {"action": "force-unlock", "actor": USER}


async def test_without_credentials_the_browser_is_asked_for_them(server) -> None:
    async with httpx.AsyncClient() as http:
        page = await http.get(f"{server.url}/", headers={"Accept": "text/html"})
    assert page.status_code == 401
    assert page.headers["www-authenticate"] == 'Basic realm="infragraph"'
    async with offline_page(server.url) as offline:  # headless: no one to type them
        with pytest.raises(PlaywrightError, match="ERR_INVALID_AUTH_CREDENTIALS"):
            await offline.page.goto(f"{server.url}/")
