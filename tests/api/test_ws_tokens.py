"""Revocation and expiry reach websockets (graphql-transport-ws on /graphql): a socket
whose token is revoked (through this server or another) or expires is closed with 4403
and gets nothing committed after it; each operation checks its caller again; a socket
that shows no token is closed within 2 s. All on the real server."""

import asyncio
import json
import time
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from tests.helpers.backend import lock_info
from tests.helpers.graphql_ws import connected, events, next_message, subscribe, ws_url
from tests.helpers.live_server import LiveServer, live_server, server_fixture

BOOT = "boot-secret"
ENV = {"INFRAGRAPH_API_TOKENS": f"boot:{BOOT}"}
BEARER = {"Authorization": f"Bearer {BOOT}"}
CREATE = """mutation($name: String!, $days: Float) {
  createToken(name: $name, role: WRITE, expiresDays: $days) { secret } }"""
REVOKE = "mutation($name: String!) { revokeToken(name: $name) { name } }"
STATES = "{ states(first: 5) { edges { node { name } } } }"

server = server_fixture(ENV, scope="module")


async def _gql(url: str, query: str, token: str = BOOT, **variables: object) -> dict[str, Any]:
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as client:
        response = await client.post(
            f"{url}/graphql", json={"query": query, "variables": variables}
        )
    body: dict[str, Any] = response.json()
    assert not body.get("errors"), body
    return body["data"]


async def _token(url: str, name: str, days: float | None = None) -> str:
    secret: str = (await _gql(url, CREATE, name=name, days=days))["createToken"]["secret"]
    return secret


async def _lock(url: str, state: str) -> None:
    async with httpx.AsyncClient(headers=BEARER) as client:
        response = await client.request("LOCK", f"{url}/states/{state}/lock", json=lock_info())
        assert response.status_code == 200, response.text


async def _closed_with(ws: ClientConnection) -> tuple[int, list[dict[str, Any]]]:
    """The close code, and every message that came before it."""
    received = []
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            received.append(await next_message(ws))
    assert closed.value.rcvd is not None, "closed without a close frame"
    return closed.value.rcvd.code, received


def _header(secret: str) -> dict[str, Any]:
    return {"headers": {"Authorization": f"Bearer {secret}"}}


def _init(secret: str) -> dict[str, Any]:
    return {"init": {"authorization": f"Bearer {secret}"}}


@pytest.mark.parametrize("shown", [_header, _init], ids=["header", "connection_init"])
async def test_a_revoked_tokens_socket_is_closed_and_gets_nothing_more(
    server: LiveServer, conn, shown
) -> None:
    secret = await _token(server.url, "ci")
    async with subscribe(server.url, token=BOOT, **shown(secret)) as ws:
        await _lock(server.url, "before")
        [event] = await events(ws, 1)
        assert event["stateName"] == "before"
        await _gql(server.url, REVOKE, name="ci")
        await _lock(server.url, "after")  # committed after the revocation
        code, received = await _closed_with(ws)
    assert code == 4403
    assert "after" not in json.dumps(received), received


async def test_a_token_revoked_through_another_server_closes_its_socket(
    server: LiveServer, conn, database_url
) -> None:
    secret = await _token(server.url, "ci")
    # a long cache: only the revocation's event can tell this server in time
    env = {**ENV, "INFRAGRAPH_TOKEN_CACHE_SECONDS": "3600"}
    with live_server(database_url, env) as other:
        async with subscribe(other.url, token=BOOT, **_header(secret)) as ws:
            await _gql(server.url, REVOKE, name="ci")
            await _lock(server.url, "after")
            code, received = await _closed_with(ws)
        assert code == 4403 and "after" not in json.dumps(received)
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {secret}"}) as client:
            assert (await client.get(f"{other.url}/states/after")).status_code == 401


async def test_an_expiring_tokens_socket_is_closed_when_it_expires(
    server: LiveServer, conn
) -> None:
    secret = await _token(server.url, "brief", days=3 / 86400)
    async with subscribe(server.url, token=BOOT, **_init(secret)) as ws:
        code, _ = await _closed_with(ws)
    assert code == 4403
    trail = await _gql(server.url, "{ events(first: 10) { edges { node { action } } } }")
    assert {"node": {"action": "token-expire"}} in trail["events"]["edges"]


async def test_each_operation_checks_its_caller_again(
    server: LiveServer, conn, database_url
) -> None:
    secret = await _token(server.url, "ci")
    env = {**ENV, "INFRAGRAPH_TOKEN_CACHE_SECONDS": "0"}  # each lookup asks the database
    with live_server(database_url, env) as other:
        async with connected(other.url, headers={"Authorization": f"Bearer {secret}"}) as ws:
            assert (await next_message(ws))["type"] == "connection_ack"
            payload = {"query": STATES}
            await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
            assert (await next_message(ws))["type"] == "next"
            # revoked behind the server's back: no event, only the next operation can tell
            await conn.execute("UPDATE api_tokens SET revoked_at = now() WHERE name = 'ci'")
            await ws.send(json.dumps({"id": "2", "type": "subscribe", "payload": payload}))
            code, received = await _closed_with(ws)
    assert code == 4403
    assert not [m for m in received if m.get("id") == "2"], received


async def test_a_socket_showing_no_token_is_closed_within_2_s(server: LiveServer) -> None:
    begun = time.monotonic()
    async with connect(ws_url(server.url), subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]
        with pytest.raises(ConnectionClosed) as closed:  # it sends nothing, not even init
            await asyncio.wait_for(ws.recv(), 5)
    took = time.monotonic() - begun
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4408
    assert took < 2.0, took


async def test_a_socket_of_an_open_server_closes_with_its_first_token(conn, database_url) -> None:
    with live_server(database_url, {"INFRAGRAPH_API_TOKENS": None}) as open_server:
        async with connected(open_server.url) as ws:
            assert (await next_message(ws))["type"] == "connection_ack"
            async with httpx.AsyncClient() as anyone:
                made = await anyone.post(
                    f"{open_server.url}/graphql",
                    json={
                        "query": 'mutation { createToken(name: "first", role: ADMIN) { secret } }'
                    },
                )
                assert made.status_code == 200 and not made.json().get("errors")
            code, _ = await _closed_with(ws)
    assert code == 4403
