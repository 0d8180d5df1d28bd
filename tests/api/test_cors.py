"""CORS (INFRAGRAPH_CORS_ORIGINS): a page on a listed origin calls /graphql with a
token, in a real browser; a page elsewhere is refused; preflights answer before auth."""

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from playwright.sync_api import Browser, Page

from app.config import Settings
from tests.helpers.backend import lock_info
from tests.helpers.browser import browser_fixture
from tests.helpers.graphql_ws import wait_for_subscriptions
from tests.helpers.live_server import LiveServer, live_server

TOKEN = "s3cret"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
QUERY = "{ states(first: 5) { totalCount } }"
browser = browser_fixture()


class _BlankPage(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<!doctype html><title>page</title>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def _origin() -> Iterator[str]:
    """A web server of a blank page on 127.0.0.1 (another port: another origin; the
    same address space as the API, so Chromium's private-network rules stay out)."""
    pages = ThreadingHTTPServer(("127.0.0.1", 0), _BlankPage)
    thread = threading.Thread(target=pages.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{pages.server_port}"
    finally:
        pages.shutdown()
        pages.server_close()


@pytest.fixture(scope="module")
def origins() -> Iterator[tuple[str, str]]:
    """(a listed origin, an origin not listed)"""
    with _origin() as listed, _origin() as elsewhere:
        yield listed, elsewhere


@pytest.fixture(scope="module")
def server(database_url: str, origins: tuple[str, str]) -> Iterator[LiveServer]:
    env = {"INFRAGRAPH_API_TOKENS": f"dash:{TOKEN}", "INFRAGRAPH_CORS_ORIGINS": origins[0]}
    with live_server(database_url, env) as running:
        yield running
        assert not running.server_errors(), running.log()


def _page_on(browser: Browser, origin: str) -> Page:
    page = browser.new_page()
    page.goto(f"{origin}/")
    return page


# What the page runs: a fetch of /graphql with the token, its outcome as a string.
_FETCH = """async ([url, token, query]) => {
    try {
        const response = await fetch(url + "/graphql", {
            method: "POST",
            headers: {"Authorization": "Bearer " + token, "Content-Type": "application/json"},
            body: JSON.stringify({query}),
        });
        return JSON.stringify({status: response.status, body: await response.json()});
    } catch (error) {
        return "refused: " + error;
    }
}"""


@pytest.mark.slow  # a browser
def test_a_page_on_a_listed_origin_gets_data(
    server: LiveServer, browser: Browser, origins: tuple[str, str]
) -> None:
    page = _page_on(browser, origins[0])
    outcome = json.loads(page.evaluate(_FETCH, [server.url, TOKEN, QUERY]))
    direct = httpx.post(f"{server.url}/graphql", json={"query": QUERY}, headers=BEARER)
    assert outcome == {"status": 200, "body": direct.json()} and "data" in direct.json()
    # the token is still required: without it, the API answers 401
    outcome = json.loads(page.evaluate(_FETCH, [server.url, "wrong", QUERY]))
    assert outcome["status"] == 401
    page.close()


@pytest.mark.slow  # a browser
def test_a_page_elsewhere_is_refused(
    server: LiveServer, browser: Browser, origins: tuple[str, str]
) -> None:
    page = _page_on(browser, origins[1])
    assert page.evaluate(_FETCH, [server.url, TOKEN, QUERY]).startswith("refused: TypeError")
    page.close()


# The page subscribes to events (graphql-transport-ws, the token in connection_init);
# window.outcome becomes the first event's payload, or how the socket closed.
_SUBSCRIBE = """([url, token]) => {
    const ws = new WebSocket(url.replace("http", "ws") + "/graphql", "graphql-transport-ws");
    const query = "subscription { events { stateName action actor } }";
    ws.onopen = () => ws.send(JSON.stringify(
        {type: "connection_init", payload: {authorization: "Bearer " + token}}));
    ws.onmessage = (message) => {
        const received = JSON.parse(message.data);
        if (received.type === "connection_ack") {
            ws.send(JSON.stringify({id: "1", type: "subscribe", payload: {query}}));
        } else if (received.type === "next") {
            window.outcome = JSON.stringify(received.payload);
            ws.close();
        }
    };
    ws.onclose = (event) => { window.outcome = window.outcome || "closed: " + event.code; };
}"""


@pytest.mark.slow  # a browser
def test_a_page_on_a_listed_origin_follows_events(
    server: LiveServer, browser: Browser, origins: tuple[str, str]
) -> None:
    page = _page_on(browser, origins[0])
    page.evaluate(_SUBSCRIBE, [server.url, TOKEN])
    wait_for_subscriptions(server.url, BEARER, 1)
    httpx.request("LOCK", f"{server.url}/states/live/lock", json=lock_info(), headers=BEARER)
    page.wait_for_function("window.outcome !== undefined")
    outcome = json.loads(page.evaluate("window.outcome"))
    assert outcome == {"data": {"events": {"stateName": "live", "action": "lock", "actor": "dash"}}}
    page.close()


@pytest.mark.slow  # a browser
def test_a_page_elsewhere_cannot_open_a_websocket(
    server: LiveServer, browser: Browser, origins: tuple[str, str]
) -> None:
    page = _page_on(browser, origins[1])
    page.evaluate(_SUBSCRIBE, [server.url, TOKEN])
    page.wait_for_function("window.outcome !== undefined")
    assert page.evaluate("window.outcome") == "closed: 1006"  # the handshake was refused
    assert f"Rejected WebSocket connection from origin '{origins[1]}'" in server.log()
    page.close()


def _preflight(url: str, origin: str) -> httpx.Response:
    return httpx.options(
        f"{url}/graphql",
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type",
        },
    )


def test_preflights_answer_before_auth(server: LiveServer, origins: tuple[str, str]) -> None:
    listed, elsewhere = origins
    allowed = _preflight(server.url, listed)
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == listed
    assert allowed.headers["access-control-allow-credentials"] == "true"
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
    refused = _preflight(server.url, elsewhere)
    assert refused.status_code == 400 and "access-control-allow-origin" not in refused.headers


def test_unset_means_no_cors_at_all(database_url: str, origins: tuple[str, str]) -> None:
    with live_server(database_url, {"INFRAGRAPH_API_TOKENS": f"dash:{TOKEN}"}) as plain:
        preflight = _preflight(plain.url, origins[0])
    assert preflight.status_code == 401
    assert not [h for h in preflight.headers if h.startswith("access-control-")]


def test_origins_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFRAGRAPH_CORS_ORIGINS", " https://a.example/, http://localhost:3000 ")
    assert Settings.from_env().cors_origins == ("https://a.example", "http://localhost:3000")
    monkeypatch.delenv("INFRAGRAPH_CORS_ORIGINS")
    assert Settings.from_env().cors_origins == ()
    for bad in ("*", "a.example", "https://a.example/path", "ftp://a.example"):
        monkeypatch.setenv("INFRAGRAPH_CORS_ORIGINS", bad)
        with pytest.raises(ValueError, match="INFRAGRAPH_CORS_ORIGINS"):
            Settings.from_env()
