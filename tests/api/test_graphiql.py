"""GraphiQL in a real browser (headless Chromium): from its CDN when the browser
reaches it, else, without hanging on "Loading", the server's own console running
the same query.

"Offline" is every request to a host other than the server blocked (aborted, or
never answered). "Online" routes the CDN to the very files it serves, taken from
the npm registry (the page's Subresource Integrity hashes must match them).
"""

import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote, urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, Page, Route, expect

from tests.backend.helpers import lock_info
from tests.browser import browser_fixture
from tests.conftest import database_of_its_own
from tests.graphql_ws import wait_for_subscriptions
from tests.live_server import LiveServer, live_server, server_fixture

pytestmark = pytest.mark.slow  # a browser, seconds a page
server = server_fixture(scope="module")
browser = browser_fixture()

CDN = "https://unpkg.com"
QUERY = "{ states(first: 3) { totalCount } }"
ANSWER = re.compile(r'"states": \{\s*"totalCount": \d+')  # as a console or GraphiQL shows it
# npm package, and the files of it the page loads (its CDN path below the package)
CDN_FILES = {
    "react@18.2.0": ["umd/react.production.min.js"],
    "react-dom@18.2.0": ["umd/react-dom.production.min.js"],
    "graphiql@3.8.3": ["graphiql.min.js", "graphiql.min.css"],
}
FALLBACK_BOUND_MS = 8000  # the page gives the CDN 3 s; the rest is the browser's


def _offline(server: LiveServer, answer: Callable[[Route], None]) -> Callable[[Route], None]:
    """A route handler: the server's requests go through, any other gets `answer`."""
    host = urlsplit(server.url).netloc

    def handle(route: Route) -> None:
        if urlsplit(route.request.url).netloc == host:
            route.continue_()
        else:
            answer(route)

    return handle


def _page(browser: Browser, server: LiveServer, answer: Callable[[Route], None]) -> Page:
    page = browser.new_page()
    page.route("**/*", _offline(server, answer))
    return page


def _console_runs_a_query(page: Page) -> None:
    console = page.locator(".ig-console")
    expect(console).to_be_visible(timeout=FALLBACK_BOUND_MS)
    expect(page.locator(".ig-notice")).to_contain_text("GraphiQL could not be loaded")
    query = page.get_by_label("Query")
    expect(query).to_have_value(QUERY)  # the query of the URL came along
    query.fill("query Count($n: Int) { states(first: $n) { totalCount } }")
    page.get_by_label("Variables").fill('{"n": 2}')
    page.get_by_role("button", name="Run").click()
    expect(page.get_by_label("Result")).to_contain_text(ANSWER)
    assert "query+Count" in page.url  # what is typed is kept in the URL (a reload keeps it)


def _docs_list_root_fields(page: Page) -> None:
    docs = page.get_by_label("Schema")
    for field in ("states(", "blastRadius(", "plan(", "events(state: String)"):
        expect(docs).to_contain_text(field)
    docs.get_by_role("link", name="Event", exact=True).first.click()
    expect(docs).to_contain_text("stateName: String!")


def test_offline_graphiql_ends_in_a_working_console(browser: Browser, server: LiveServer) -> None:
    page = _page(browser, server, lambda route: route.abort("internetdisconnected"))
    page.goto(f"{server.url}/graphql?query={quote(QUERY)}")
    _console_runs_a_query(page)
    _docs_list_root_fields(page)
    page.close()


def test_offline_with_tokens_the_browser_credentials_go_along(
    browser: Browser, admin_url: str
) -> None:
    """The browser's Basic credentials for the page (the server asks for them) serve
    the console's requests too."""
    # a database of its own: its token closes for good the database it starts on
    with (
        database_of_its_own(admin_url) as url,
        live_server(url, {"INFRAGRAPH_API_TOKENS": "dash:s3cret"}) as guarded,
    ):
        context = browser.new_context(http_credentials={"username": "dash", "password": "s3cret"})
        page = context.new_page()
        page.route("**/*", _offline(guarded, lambda route: route.abort("internetdisconnected")))
        page.goto(f"{guarded.url}/graphql?query={quote(QUERY)}")
        _console_runs_a_query(page)
        _docs_list_root_fields(page)
        context.close()
        assert '"POST /graphql HTTP/1.1" 200' in guarded.log()


def test_an_unanswering_cdn_is_given_up_in_bounded_time(
    browser: Browser, server: LiveServer
) -> None:
    asked: list[str] = []

    def hang(route: Route) -> None:  # never answered, as behind a firewall dropping packets
        asked.append(route.request.url)

    page = _page(browser, server, hang)
    page.goto(f"{server.url}/graphql?query={quote(QUERY)}", wait_until="commit")
    _console_runs_a_query(page)
    expect(page.locator(".ig-notice")).to_contain_text("no answer in 3 s")
    assert asked and all(url.startswith(f"{CDN}/") for url in asked)  # the CDN was tried first
    page.close()


def test_the_console_follows_a_subscription(browser: Browser, server: LiveServer) -> None:
    page = _page(browser, server, lambda route: route.abort("internetdisconnected"))
    page.goto(f"{server.url}/console/")
    page.get_by_label("Query").wait_for()
    assert "null" not in page.locator("body").inner_text().split("infragraph console")[0]
    page.get_by_label("Query").fill("subscription { events { stateName action } }")
    page.get_by_role("button", name="Run").click()
    wait_for_subscriptions(server.url, {}, 1)
    httpx.request("LOCK", f"{server.url}/states/watched/lock", json=lock_info())
    expect(page.get_by_label("Result")).to_contain_text('"stateName": "watched"')
    page.get_by_role("button", name="Stop").click()
    wait_for_subscriptions(server.url, {}, 0)
    page.close()


@pytest.fixture(scope="module")
def cdn_copies(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The CDN's files, from the npm registry (`npm pack`): {package}/{path}."""
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: no copies of the CDN's files")
    root = tmp_path_factory.mktemp("cdn")
    packed = subprocess.run(
        ["npm", "pack", "--silent", *CDN_FILES],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if packed.returncode != 0:
        pytest.skip(f"npm could not fetch GraphiQL's packages: {packed.stderr.strip()}")
    for package in CDN_FILES:
        name, version = package.rsplit("@", 1)
        with tarfile.open(root / f"{name}-{version}.tgz") as archive:
            archive.extractall(root / package, filter="data")
    return root


@pytest.fixture
def online(cdn_copies: Path) -> Iterator[Callable[[Route], None]]:
    served: list[str] = []

    def cdn(route: Route) -> None:
        url = urlsplit(route.request.url)
        package, _, path = url.path.lstrip("/").partition("/")
        if url.netloc != "unpkg.com" or path not in CDN_FILES.get(package, []):
            route.abort("internetdisconnected")
            return
        served.append(route.request.url)
        kind = "text/css" if path.endswith(".css") else "application/javascript"
        route.fulfill(
            body=(cdn_copies / package / "package" / path).read_bytes(),
            headers={"Content-Type": kind, "Access-Control-Allow-Origin": "*"},
        )

    yield cdn
    assert len(served) == sum(map(len, CDN_FILES.values()))


def test_with_the_cdn_reachable_graphiql_loads(
    browser: Browser, server: LiveServer, online: Callable[[Route], None]
) -> None:
    page = _page(browser, server, online)
    page.goto(f"{server.url}/graphql?query={quote(QUERY)}")
    editor = page.locator(".graphiql-query-editor")
    expect(editor).to_contain_text("totalCount", timeout=FALLBACK_BOUND_MS)
    page.locator(".graphiql-execute-button").click()
    expect(page.locator(".graphiql-response")).to_contain_text(ANSWER)
    assert page.locator(".ig-console").count() == 0
    page.close()
