"""/graphql over HTTP: GraphiQL for browsers, GET queries, bearer auth, the real server."""

import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from app.config import Settings
from app.server import create_app
from tests.live_server import LiveServer, server_fixture

server = server_fixture(scope="module")


async def test_graphiql_on_get_from_a_browser(client) -> None:
    page = await client.get("/graphql", headers={"Accept": "text/html"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<title>Strawberry GraphiQL</title>" in page.text and 'id="graphiql"' in page.text
    query = await client.get("/graphql", params={"query": "{ states { totalCount } }"})
    assert query.json() == {"data": {"states": {"totalCount": 0}}}


async def test_bearer_token_required_when_tokens_are_configured(database_url, conn) -> None:
    app = create_app(Settings(api_tokens={"t0ken": "dash"}), database_url=database_url)
    query = {"query": "{ states { totalCount } }"}
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client,
    ):
        assert (await client.post("/graphql", json=query)).status_code == 401
        wrong = {"Authorization": "Bearer nope"}
        assert (await client.post("/graphql", json=query, headers=wrong)).status_code == 401
        ok = await client.post("/graphql", json=query, headers={"Authorization": "Bearer t0ken"})
        assert ok.json() == {"data": {"states": {"totalCount": 0}}}


def _chromium() -> str | None:
    return next(
        filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None
    )


def test_graphiql_loads_in_chromium(server: LiveServer, tmp_path: Path) -> None:
    """The page a browser gets and renders. GraphiQL's scripts come from a CDN (unpkg),
    unreachable offline: what is checked is the served page as chromium parsed it."""
    chromium = _chromium()
    if chromium is None:
        pytest.skip("chromium is not installed (apt-get install chromium): no browser check")
    dumped = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path}",
            "--dump-dom",
            f"{server.url}/graphql",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    dom = dumped.stdout
    assert "<title>Strawberry GraphiQL</title>" in dom
    assert '<div id="graphiql" class="graphiql-container">' in dom
    assert '"GET /graphql HTTP/1.1" 200' in server.log()
