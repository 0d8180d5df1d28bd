"""The dashboard's overview is live: a `terraform apply` shows on an open overview,
without a reload, through the `events` subscription (graphql-transport-ws)."""

import pytest

from bench.browser import chromium, offline_page
from tests.helpers.live_server import LiveServer
from tests.helpers.terraform import PASSWORD, USERNAME, Backend

STATE = "team/dashboard"
SHOWS_WITHIN_MS = 2000  # the bound, from the apply's end (its write committed)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(chromium() is None, reason="chromium is not installed"),
]


async def test_an_apply_shows_on_the_open_overview_without_a_reload(
    new_project, backend: Backend, server: LiveServer
) -> None:
    terraform = new_project("chain", backend.block(STATE))
    (await terraform.run("init")).check()
    async with offline_page(server.url, (USERNAME, PASSWORD)) as browser:
        page = browser.page
        await page.goto(f"{server.url}/")
        await page.wait_for_selector("#live.on")  # subscribed
        assert await page.locator(f'tr[data-state="{STATE}"]').count() == 0
        await page.evaluate("window.sameDocument = true")  # gone if the page reloads
        (await terraform.run("apply", "-auto-approve")).check()
        write = page.locator("#events li", has_text=STATE).filter(has_text="write")
        await write.first.wait_for(timeout=SHOWS_WITHIN_MS)
        row = page.locator(f'tr[data-state="{STATE}"]')
        assert await row.locator(".serial").inner_text() == "1"
        assert await row.locator(".writer").inner_text() == USERNAME
        assert await page.evaluate("window.sameDocument") is True
    assert browser.blocked == []
    # the dashboard's websocket: /graphql's app under /ui/, where the browser sends the login
    assert browser.sockets == [server.url.replace("http://", "ws://") + "/ui/live"]
