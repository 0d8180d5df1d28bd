"""Headless Chromium (Debian's package, driven by Playwright's async API) kept to one
server: every request to another host is aborted and recorded. For the dashboard's
browser tests and the README's screenshots (bench/screenshots.py)."""

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from playwright.async_api import Page, Route, async_playwright

from tests.helpers.browser import chromium


@dataclass
class Offline:
    page: Page
    requested: list[str] = field(default_factory=list)  # every URL the page asked for
    blocked: list[str] = field(default_factory=list)  # those for another host: aborted
    sockets: list[str] = field(default_factory=list)  # WebSocket URLs opened (not routed)


@contextlib.asynccontextmanager
async def offline_page(
    server_url: str,
    credentials: tuple[str, str] | None = None,
    *,
    width: int = 1400,
    height: int = 900,
) -> AsyncIterator[Offline]:
    """A page of a fresh browser context (Basic `credentials` when given) that may only
    reach `server_url`'s host and port."""
    executable = chromium()
    if executable is None:
        raise RuntimeError("chromium is not installed (apt-get install chromium)")
    own = urlsplit(server_url).netloc
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            context = await browser.new_context(
                viewport={"width": width, "height": height},
                http_credentials=(
                    {"username": credentials[0], "password": credentials[1]}
                    if credentials
                    else None
                ),
            )
            offline = Offline(await context.new_page())

            async def guard(route: Route) -> None:
                url = route.request.url
                offline.requested.append(url)
                if urlsplit(url).netloc != own:
                    offline.blocked.append(url)
                    await route.abort()
                else:
                    await route.continue_()

            await context.route("**/*", guard)
            offline.page.on("websocket", lambda socket: offline.sockets.append(socket.url))
            yield offline
        finally:
            await browser.close()
