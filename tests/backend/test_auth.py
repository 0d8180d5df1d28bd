"""API tokens: Basic or Bearer on every route but /healthz, the actor in events."""

import base64
from types import SimpleNamespace

import pytest

from app.auth import UNVERIFIED, AuthMiddleware, TokenCache, authenticate
from tests.helpers.backend import TOKENS, assert_error, events, http_client, tf_state
from tests.helpers.live_server import server_fixture

open_server = server_fixture({"INFRAGRAPH_API_TOKENS": None}, scope="module")


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


async def test_every_route_but_healthz_needs_a_token(server, conn) -> None:
    async with http_client(server, None) as anonymous:
        for method in ("GET", "POST", "DELETE", "LOCK", "UNLOCK"):
            response = await anonymous.request(method, "/states/a", content=tf_state())
            assert_error(response, 401, "UNAUTHENTICATED")
            assert response.headers["www-authenticate"].startswith("Basic")
        assert_error(await anonymous.post("/graphql", json={}), 401, "UNAUTHENTICATED")
        assert (await anonymous.get("/healthz")).status_code == 200
    assert await conn.fetchval("SELECT count(*) FROM states") == 0


@pytest.mark.parametrize(
    "authorization",
    [
        basic("tf", "wrong"),
        basic("ci", TOKENS["tf"]),  # a real token under another name
        basic("", TOKENS["tf"]),
        "Basic " + base64.b64encode(TOKENS["tf"].encode()).decode(),  # no user:
        "Basic !!!not-base64",
        "Bearer wrong",
        "Bearer",
        f"Token {TOKENS['tf']}",
        TOKENS["tf"],
    ],
)
async def test_anything_but_a_valid_token_is_401(server, authorization) -> None:
    async with http_client(server, None) as client:
        response = await client.get("/states/a", headers={"Authorization": authorization})
    assert_error(response, 401, "UNAUTHENTICATED")


async def test_basic_and_bearer_tokens_name_the_actor(server, conn) -> None:
    async with http_client(server, None) as client:
        first = await client.post(
            "/states/a", content=tf_state(1), headers={"Authorization": basic("tf", TOKENS["tf"])}
        )
        second = await client.post(
            "/states/a", content=tf_state(2), headers={"Authorization": f"Bearer {TOKENS['ci']}"}
        )
    assert first.status_code == second.status_code == 200
    assert [(e["action"], e["actor"]) for e in await events(conn, "a")] == [
        ("write", "tf"),
        ("write", "ci"),
    ]


async def test_an_open_server_says_so_and_records_anonymous(open_server, conn) -> None:
    assert "INFRAGRAPH_API_TOKENS is unset" in open_server.log()
    async with http_client(open_server, ("whoever", "whatever")) as client:
        assert (await client.post("/states/a", content=tf_state())).status_code == 200
    assert [e["actor"] for e in await events(conn, "a")] == ["anonymous"]


def test_tokens_may_hold_colons() -> None:
    tokens = {"se:cr:et": "ci", "other": "tf"}
    assert authenticate(tokens, basic("ci", "se:cr:et")) == "ci"
    assert authenticate(tokens, "Bearer se:cr:et") == "ci"
    assert authenticate(tokens, basic("ci", "se:cr")) is None


async def _websocket(pool, headers: list[tuple[bytes, bytes]]) -> tuple[list[dict], dict | None]:
    """What AuthMiddleware sends a websocket handshake, and the scope the app got."""
    sent: list[dict] = []
    reached: list[dict] = []

    async def app(scope, receive, send) -> None:
        reached.append(scope)

    async def receive() -> dict:
        return {"type": "websocket.connect"}

    async def send(message: dict) -> None:
        sent.append(message)

    middleware = AuthMiddleware(app, {"secret": "ci"})
    server = SimpleNamespace(state=SimpleNamespace(token_cache=TokenCache(pool, 10)))
    scope = {"type": "websocket", "path": "/graphql", "headers": headers, "app": server}
    await middleware(scope, receive, send)
    return sent, reached[0] if reached else None


async def test_a_websocket_with_a_wrong_token_is_closed(pool) -> None:
    sent, reached = await _websocket(pool, [(b"authorization", b"Bearer nope")])
    assert sent == [{"type": "websocket.close", "code": 1008}] and reached is None


async def test_a_websocket_without_a_header_goes_on_unverified(pool) -> None:
    """Its connection_init payload brings the token (tests/api/test_subscriptions.py)."""
    sent, reached = await _websocket(pool, [])
    assert sent == [] and reached is not None and reached["state"]["principal"] is UNVERIFIED
    sent, reached = await _websocket(pool, [(b"authorization", b"Bearer secret")])
    assert reached is not None and reached["state"]["actor"] == "ci"
