"""Subscriptions on a live server: graphql-transport-ws on /graphql, tokens in the
header or in connection_init (database tokens too), the `state` filter and what the
token may read, a subscriber that falls behind."""

import json
from typing import Any

import asyncpg
import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

from app import tokens
from app.graph.notify import QUEUE_SIZE
from tests.helpers.backend import lock_info
from tests.helpers.graphql_ws import connected, events, next_message, subscribe
from tests.helpers.live_server import LiveServer, server_fixture

TOKEN = "s3cret"
BEARER = {"Authorization": f"Bearer {TOKEN}"}

server = server_fixture({"INFRAGRAPH_API_TOKENS": f"dash:{TOKEN}"}, scope="module")


async def _lock(server: LiveServer, state: str) -> None:
    async with httpx.AsyncClient(headers=BEARER) as client:
        response = await client.request(
            "LOCK", f"{server.url}/states/{state}/lock", json=lock_info()
        )
        assert response.status_code == 200, response.text


async def test_a_browser_authenticates_in_connection_init(server: LiveServer, conn) -> None:
    init = {"authorization": f"Bearer {TOKEN}"}
    async with subscribe(server.url, init=init, token=TOKEN) as ws:
        await _lock(server, "a")
        [event] = await events(ws, 1)
    assert (event["stateName"], event["action"], event["actor"]) == ("a", "lock", "dash")


@pytest.mark.parametrize("init", [{}, {"authorization": "Bearer wrong"}, {"authorization": 7}])
async def test_no_token_no_subscription(server: LiveServer, init) -> None:
    async with connected(server.url, init) as ws:
        with pytest.raises(ConnectionClosed) as closed:
            await next_message(ws)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403


async def test_a_wrong_header_is_refused_at_the_handshake(server: LiveServer) -> None:
    with pytest.raises(InvalidStatus) as refused:
        async with connected(server.url, headers={"Authorization": "Bearer wrong"}):
            pass
    # answered as HTTP would be: the status and the reason
    assert refused.value.response.status_code == 401
    assert b"not known" in (refused.value.response.body or b"")


async def test_state_filters_events(server: LiveServer, conn) -> None:
    async with subscribe(server.url, {"state": "b"}, token=TOKEN, headers=BEARER) as ws:
        await _lock(server, "a")
        await _lock(server, "b")
        [event] = await events(ws, 1)
    assert event["stateName"] == "b"


async def test_a_subscriber_that_falls_behind_gets_an_error(
    server: LiveServer, conn: asyncpg.Connection
) -> None:
    """A client that does not read: the server's sends wait, its queue fills."""
    written = 20 * QUEUE_SIZE
    async with subscribe(server.url, token=TOKEN, headers=BEARER) as ws:
        await conn.execute(
            """INSERT INTO events (state_name, action, actor)
               SELECT 'a', 'write', 'x' FROM generate_series(1, $1)""",
            written,
        )
        received = 0
        while (message := await next_message(ws))["type"] == "next" and (
            "errors" not in message["payload"]
        ):
            received += 1
        assert received < written
        [error] = message["payload"]["errors"]
        assert error["extensions"]["code"] == "LIMIT_EXCEEDED"
        assert "subscribe again" in error["message"]
        assert (await next_message(ws))["type"] == "complete"


async def test_an_invalid_subscription_gets_coded_errors(server: LiveServer) -> None:
    async with connected(server.url, {"authorization": f"Bearer {TOKEN}"}) as ws:
        assert (await next_message(ws))["type"] == "connection_ack"
        payload = {"query": "subscription { events(state: 1) { nope } }"}
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
        message = await next_message(ws)
    assert message["type"] == "error"
    assert {e["extensions"]["code"] for e in message["payload"]} == {"BAD_INPUT"}


async def test_a_read_token_gets_only_its_states_events(server: LiveServer, db_token) -> None:
    """Through connection_init, as a browser: a database token for team/* never gets
    another state's event (the one before it would arrive first)."""
    secret = await db_token("team-reader", states=["team/*"])
    async with subscribe(server.url, init={"authorization": f"Bearer {secret}"}, token=TOKEN) as ws:
        await _lock(server, "other/a")
        await _lock(server, "team/a")
        [event] = await events(ws, 1)
    assert (event["stateName"], event["actor"]) == ("team/a", "dash")


@pytest.mark.parametrize("reach", [{"expires_days": 1e-9}, {"revoked": True}])
async def test_an_expired_or_revoked_token_in_connection_init_is_refused(
    server: LiveServer, conn, db_token, reach: dict[str, Any]
) -> None:
    revoked = reach.pop("revoked", False)
    secret = await db_token("gone", states=["team/*"], **reach)
    if revoked:
        await tokens.revoke_token(conn, "gone", revoked_by="test", bootstrap_admin=True)
    async with connected(server.url, {"authorization": f"Bearer {secret}"}) as ws:
        with pytest.raises(ConnectionClosed) as closed:
            await next_message(ws)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403
