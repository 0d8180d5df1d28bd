"""A graphql-transport-ws client for tests: subscriptions on a live server's /graphql.

async with subscribe(server.url, {"state": "a"}) as ws:
    ...  # the server has the subscription: what is committed now reaches it
    [event] = await events(ws, 1)
"""

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

from tests.helpers.waiting import wait_until_sync

EVENTS = """subscription ($state: String) {
    events(state: $state) { id stateName action actor serial detail createdAt }
}"""
_SUBSCRIBERS = re.compile(r"^infragraph_subscribers (\S+)$", re.MULTILINE)
WAIT_S = 30.0


def ws_url(url: str) -> str:
    return url.replace("http://", "ws://", 1) + "/graphql"


@contextlib.asynccontextmanager
async def connected(
    url: str,
    init: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
) -> AsyncIterator[ClientConnection]:
    """A websocket on `url`'s /graphql, connection_init sent with `init` as its payload."""
    async with connect(
        ws_url(url), subprotocols=["graphql-transport-ws"], additional_headers=headers
    ) as ws:  # type: ignore[list-item]
        await ws.send(json.dumps({"type": "connection_init", "payload": dict(init or {})}))
        yield ws


async def next_message(ws: ClientConnection) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), WAIT_S))
    return message


@contextlib.asynccontextmanager
async def subscribe(
    url: str,
    variables: Mapping[str, Any] | None = None,
    *,
    token: str | None = None,
    init: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    query: str = EVENTS,
) -> AsyncIterator[ClientConnection]:
    """A websocket with one subscription (id "1") that the server has started: what is
    committed from then on reaches it. `token` reads the server's /metrics (it counts
    subscriptions); the websocket authenticates with `init` or `headers`."""
    metrics = {"Authorization": f"Bearer {token}"} if token else {}
    before = await asyncio.to_thread(subscription_count, url, metrics)
    async with connected(url, init, headers) as ws:
        ack = await next_message(ws)
        assert ack["type"] == "connection_ack", ack
        payload = {"query": query, "variables": dict(variables or {})}
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
        await asyncio.to_thread(wait_for_subscriptions, url, metrics, before + 1)
        yield ws
    await asyncio.to_thread(wait_for_subscriptions, url, metrics, before)


async def events(ws: ClientConnection, count: int) -> list[dict[str, Any]]:
    """The next `count` events the subscription "1" delivers."""
    found = []
    for _ in range(count):
        message = await next_message(ws)
        assert message["type"] == "next" and "errors" not in message["payload"], message
        found.append(message["payload"]["data"]["events"])
    return found


def subscription_count(url: str, headers: Mapping[str, str]) -> int:
    """How many subscriptions the server at `url` has open (its /metrics)."""
    response = httpx.get(f"{url}/metrics", headers=headers)
    found = _SUBSCRIBERS.search(response.raise_for_status().text)
    assert found is not None, "no infragraph_subscribers in /metrics"
    return int(float(found[1]))


def wait_for_subscriptions(url: str, headers: Mapping[str, str], count: int) -> None:
    """Until the server at `url` has `count` subscriptions open."""
    wait_until_sync(
        lambda: subscription_count(url, headers) == count,
        f"{url} to have {count} subscriptions open",
        within=WAIT_S,
    )
