"""/graphql over HTTP: GraphiQL for browsers, GET queries, bearer auth."""

import re

import httpx

from app.api.app import GRAPHIQL_CSP
from app.config import Settings
from app.server import create_app


async def test_graphiql_on_get_from_a_browser(client) -> None:
    page = await client.get("/graphql", headers={"Accept": "text/html"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<title>infragraph GraphiQL</title>" in page.text and 'id="graphiql"' in page.text
    # its files from here, and a policy that lets the page load nothing from elsewhere
    # (in a browser: tests/api/test_graphiql.py)
    policy = page.headers["content-security-policy"]
    assert policy.startswith(GRAPHIQL_CSP) and "frame-ancestors 'none'" in policy
    sources = {word for word in policy.replace(";", " ").split() if "." in word or ":" in word}
    assert sources == {"data:"}  # no host named: 'self' alone
    files = re.findall(r'(?:src|href)="(/graphiql/[^"]+)"', page.text)
    assert len(files) == 6  # GraphiQL's two, React's two, ours two
    for path in files:
        file = await client.get(path)
        assert file.status_code == 200 and file.content, path
    assert "http" not in page.text  # no absolute address
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
