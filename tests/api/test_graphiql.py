"""GraphiQL in a real browser (headless Chromium) with every host but the server blocked:
its own DOM, a query with variables and a token header, the docs explorer, a
subscription; every file from the server. The shipped copies match the sums their
README gives. (The page's policy: tests/api/test_http.py.)
"""

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from playwright.sync_api import Browser, Page, Request, Route, expect

from app.api.app import GRAPHIQL_DIR
from tests.helpers.browser import browser_fixture
from tests.helpers.databases import database_of_its_own
from tests.helpers.live_server import LiveServer, live_server, server_fixture

server = server_fixture(scope="module")
browser = browser_fixture()

QUERY = "query Count($n: Int) { states(first: $n) { totalCount } }"
TWO, ONE = '{"n": 2}', '{"n": 1}'  # variables
ANSWER = re.compile(r'"states": \{\s*"totalCount": \d+')
LOADED_MS = 15000  # 3.5 MB of GraphiQL parsed on a busy machine


class Offline:
    """A page whose requests to any host but the server's are aborted, and recorded."""

    def __init__(self, page: Page, server_url: str) -> None:
        self.page = page
        self.host = urlsplit(server_url).netloc
        self.elsewhere: list[str] = []
        self.served: list[str] = []
        page.route("**/*", self._handle)
        page.on("request", self._seen)

    def _handle(self, route: Route) -> None:
        if urlsplit(route.request.url).netloc == self.host:
            route.continue_()
        else:
            self.elsewhere.append(route.request.url)
            route.abort("internetdisconnected")

    def _seen(self, request: Request) -> None:
        if urlsplit(request.url).netloc == self.host:
            self.served.append(urlsplit(request.url).path)


@pytest.fixture
def offline(browser: Browser, server: LiveServer) -> Iterator[Offline]:
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield Offline(page, server.url)
    page.close()
    assert errors == []  # no script error, no refusal by the page's policy


def _set_editor(page: Page, selector: str, text: str) -> None:
    """Types into one of GraphiQL's CodeMirror editors, as a paste would."""
    page.locator(f"{selector} .CodeMirror:visible").first.evaluate(
        "(element, text) => element.CodeMirror.setValue(text)", text
    )


def _graphiql_loaded(page: Page) -> None:
    expect(page.locator(".graphiql-container")).to_be_visible(timeout=LOADED_MS)
    expect(page.locator(".graphiql-query-editor .CodeMirror")).to_be_visible()


def _run(page: Page) -> None:
    page.locator(".graphiql-execute-button").click()


@pytest.mark.slow  # a browser
def test_offline_graphiql_runs_a_query_with_variables(offline: Offline, server: LiveServer) -> None:
    page = offline.page
    page.goto(f"{server.url}/graphql?query={quote(QUERY)}&variables={quote(TWO)}")
    _graphiql_loaded(page)
    expect(page.locator(".graphiql-query-editor")).to_contain_text("totalCount")
    _run(page)
    expect(page.locator(".graphiql-response")).to_contain_text(ANSWER)
    _set_editor(
        page,
        ".graphiql-query-editor",
        "query Again($n: Int) { states(first: $n) { edges { node { name } } } }",
    )
    expect(page).to_have_url(re.compile(r"query=query\+Again"))  # what is typed is kept
    assert offline.elsewhere == []
    assert "/graphiql/graphiql@3.8.3/graphiql.min.js" in offline.served


@pytest.mark.slow  # a browser
def test_offline_graphiql_opens_the_docs_explorer(offline: Offline, server: LiveServer) -> None:
    page = offline.page
    page.goto(f"{server.url}/graphql")
    _graphiql_loaded(page)
    page.get_by_role("button", name="Show Documentation Explorer").click()
    docs = page.locator(".graphiql-doc-explorer")
    expect(docs).to_contain_text("Root Types", timeout=LOADED_MS)
    docs.get_by_text("Query", exact=True).first.click()
    for field in ("states", "blastRadius", "statesGraph"):
        expect(docs).to_contain_text(field)
    assert offline.elsewhere == []


@pytest.mark.slow  # a browser
def test_the_token_of_the_headers_editor_is_the_one_used(browser: Browser, admin_url: str) -> None:
    """The page comes with the browser's Basic credentials (one token); a query with
    another token in GraphiQL's headers runs as that other token."""
    tokens = {"INFRAGRAPH_API_TOKENS": "page:p4ge-secret,header:h3ad-secret"}
    # a database of its own: its tokens close for good the database it starts on
    with database_of_its_own(admin_url) as url, live_server(url, tokens) as guarded:
        context = browser.new_context(
            http_credentials={"username": "page", "password": "p4ge-secret"}
        )
        offline = Offline(context.new_page(), guarded.url)
        page = offline.page
        sent: list[str | None] = []
        page.on(
            "request",
            lambda r: sent.append(r.headers.get("authorization")) if r.method == "POST" else None,
        )
        who = "query Who($n: Int) { viewer { name } states(first: $n) { totalCount } }"
        page.goto(f"{guarded.url}/graphql?query={quote(who)}&variables={quote(ONE)}")
        _graphiql_loaded(page)
        page.get_by_role("button", name="Headers").click()
        _set_editor(page, ".graphiql-editor-tool", '{"Authorization": "Bearer h3ad-secret"}')
        _run(page)
        response = page.locator(".graphiql-response")
        expect(response).to_contain_text('"name": "header"')
        expect(response).to_contain_text(ANSWER)
        assert "Bearer h3ad-secret" in sent
        assert offline.elsewhere == []
        context.close()


def test_the_shipped_copies_are_the_released_files() -> None:
    """Each vendored file has the SHA-256 its README gives (as the npm tarball had it),
    and each package folder carries its LICENSE."""
    readme = (GRAPHIQL_DIR / "README.md").read_text()
    sums = dict(
        (name, digest) for digest, name in re.findall(r"^([0-9a-f]{64})  (\S+)$", readme, re.M)
    )
    static = GRAPHIQL_DIR / "static"
    shipped = {
        str(p.relative_to(static))
        for p in static.rglob("*")
        if p.is_file() and "@" in p.parent.name
    }
    assert set(sums) == shipped
    for name, digest in sums.items():
        assert hashlib.sha256((static / name).read_bytes()).hexdigest() == digest, name
    packages = {Path(name).parent for name in shipped}
    assert {Path(p) / "LICENSE" for p in packages} <= {Path(n) for n in shipped}
    assert {p.name.split("@")[0] for p in packages} == {"graphiql", "react", "react-dom"}
