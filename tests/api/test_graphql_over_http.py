"""GraphQL over HTTP's `application/graphql-response+json`: a client asking for it gets
it, with 400 and no `data` for a request that fails before execution; `application/json`
clients keep a 200 for every GraphQL answer."""

import httpx
import pytest

from app.api.media import GRAPHQL_RESPONSE, JSON, response_media_type
from app.api.runtime.limits import MAX_ALIASES
from app.graph.write.version import write_version
from tests.helpers.live_server import server_fixture
from tests.helpers.states import chain_graph

ASKS = {"Accept": GRAPHQL_RESPONSE}
server = server_fixture()

# Requests that fail before execution: parse, validation, variables, a size limit.
REQUEST_ERRORS = [
    ("{ states { ", None, "BAD_INPUT"),
    ("{ nope }", None, "BAD_INPUT"),
    ("query ($n: Int!) { states(first: $n) { totalCount } }", {"n": "ten"}, "BAD_INPUT"),
    ("query ($n: Int!) { states(first: $n) { totalCount } }", {}, "BAD_INPUT"),
    (
        "{" + " ".join(f"a{i}: __typename" for i in range(MAX_ALIASES + 1)) + "}",
        None,
        "LIMIT_EXCEEDED",
    ),
]


@pytest.mark.parametrize(("query", "variables", "code"), REQUEST_ERRORS)
async def test_a_request_error_is_a_400_without_data(client, conn, query, variables, code) -> None:
    body = {"query": query, "variables": variables}
    response = await client.post("/graphql", json=body, headers=ASKS)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == GRAPHQL_RESPONSE
    answer = response.json()
    assert "data" not in answer
    assert [e["extensions"]["code"] for e in answer["errors"]] == [code]
    # the same request from an application/json client: 200 and data null, as ever
    legacy = await client.post("/graphql", json=body, headers={"Accept": JSON})
    assert legacy.status_code == 200 and legacy.headers["content-type"] == JSON
    assert legacy.json()["data"] is None and legacy.json()["errors"]


async def test_results_and_field_errors_are_200s_in_the_media_type(client, conn) -> None:
    await write_version(conn, "g", chain_graph(), actor="test")
    ok = await client.post("/graphql", json={"query": "{ states { totalCount } }"}, headers=ASKS)
    assert ok.status_code == 200 and ok.headers["content-type"] == GRAPHQL_RESPONSE
    assert ok.json() == {"data": {"states": {"totalCount": 1}}}
    # executed, then failed in a field: a result (data present), so 200
    query = '{ blastRadius(state: "nope", address: "x") { totalCount } }'
    field_error = await client.post("/graphql", json={"query": query}, headers=ASKS)
    assert field_error.status_code == 200, field_error.text
    assert "data" in field_error.json()
    assert [e["extensions"]["code"] for e in field_error.json()["errors"]] == ["NOT_FOUND"]
    # GET answers alike
    got = await client.get("/graphql", params={"query": "{ nope }"}, headers=ASKS)
    assert got.status_code == 400 and got.headers["content-type"] == GRAPHQL_RESPONSE


async def test_clients_without_it_keep_application_json(client, conn) -> None:
    for accept in (None, "*/*", JSON, f"{JSON}, {GRAPHQL_RESPONSE};q=0.5"):
        headers = {"Accept": accept} if accept else {}
        response = await client.post("/graphql", json={"query": "{ nope }"}, headers=headers)
        assert response.status_code == 200, accept
        assert response.headers["content-type"] == JSON, accept


def test_through_the_real_server(server) -> None:
    bad = httpx.post(f"{server.url}/graphql", json={"query": "{ nope"}, headers=ASKS)
    assert bad.status_code == 400 and bad.headers["content-type"] == GRAPHQL_RESPONSE
    assert "data" not in bad.json()
    good = httpx.post(f"{server.url}/graphql", json={"query": "{ __typename }"}, headers=ASKS)
    assert good.status_code == 200 and good.json() == {"data": {"__typename": "Query"}}


@pytest.mark.parametrize(
    ("accept", "media"),
    [
        (None, JSON),
        ("", JSON),
        ("*/*", JSON),
        (GRAPHQL_RESPONSE, GRAPHQL_RESPONSE),
        (f"{GRAPHQL_RESPONSE}, {JSON}", GRAPHQL_RESPONSE),
        (f"{JSON};q=0.9, {GRAPHQL_RESPONSE}", GRAPHQL_RESPONSE),
        (f"{GRAPHQL_RESPONSE};q=0.5, {JSON}", JSON),
        (f"{GRAPHQL_RESPONSE};q=0", JSON),
        (f"{GRAPHQL_RESPONSE};q=nope", JSON),
        ("Application/GraphQL-Response+JSON ; charset=utf-8", GRAPHQL_RESPONSE),
    ],
)
def test_negotiation(accept: str | None, media: str) -> None:
    assert response_media_type(accept) == media


@pytest.mark.parametrize("accept", [JSON, GRAPHQL_RESPONSE])
async def test_a_subscription_over_http_is_refused_with_a_coded_error(
    client, conn, caplog, accept
) -> None:
    """Subscriptions are served over the websocket: over POST or GET one is a request
    error naming the transport, never run as a query (and never logged as a bug)."""
    query = "subscription { events { id action } }"
    with caplog.at_level("ERROR", logger="infragraph.api"):
        posted = await client.post("/graphql", json={"query": query}, headers={"Accept": accept})
        got = await client.get("/graphql", params={"query": query}, headers={"Accept": accept})
    for response, method in ((posted, "POST"), (got, "GET")):
        assert response.status_code == (400 if accept == GRAPHQL_RESPONSE else 200)
        [error] = response.json()["errors"]
        assert error["extensions"] == {
            "code": "METHOD_NOT_ALLOWED",
            "detail": {"transport": "graphql-transport-ws", "method": method},
        }
        assert "graphql-transport-ws" in error["message"] and method in error["message"]
        assert response.json().get("data") is None
    assert caplog.records == []


async def test_what_strawberry_refuses_over_http_is_refused_as_before(client, conn) -> None:
    mutation = await client.get("/graphql", params={"query": "mutation { __typename }"})
    assert mutation.status_code == 400 and "mutations are not allowed" in mutation.text
    missing = await client.post("/graphql", json={"variables": {}})
    assert missing.status_code == 400


def test_a_subscription_over_http_through_the_real_server(server) -> None:
    query = "subscription { events { id } }"
    answer = httpx.post(f"{server.url}/graphql", json={"query": query}, headers=ASKS)
    assert answer.status_code == 400
    assert answer.json()["errors"][0]["extensions"]["code"] == "METHOD_NOT_ALLOWED"
    assert "Subscription.events" not in server.log()
    assert not server.server_errors(), server.log()
