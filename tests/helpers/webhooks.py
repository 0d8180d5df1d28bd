"""Calls of a live server's webhook API, the settings the tests run it with, and the
module fixture that runs it on the module's database."""

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import httpx
import pytest

from app.webhooks.signing import verify
from tests.helpers.live_server import LiveServer, live_server
from tests.helpers.webhook_receiver import Received

# Loopback receivers over http, retries and checks quick enough for a test.
FAST = {
    "INFRAGRAPH_WEBHOOK_ALLOW_HTTP": "1",
    "INFRAGRAPH_WEBHOOK_ALLOW_PRIVATE": "1",
    "INFRAGRAPH_WEBHOOK_RETRY_MIN_S": "0.1",
    "INFRAGRAPH_WEBHOOK_RETRY_MAX_S": "0.5",
    "INFRAGRAPH_WEBHOOK_POLL_S": "0.3",
    "INFRAGRAPH_WEBHOOK_TIMEOUT_S": "2",
    "INFRAGRAPH_API_TOKENS": None,
}
SECRET = "a-secret-of-some-length"
ALL_KINDS = [
    "STATE_WRITTEN",
    "LOCK_HELD",
    "LOCK_FORCE_RELEASED",
    "CONSUMER_STALE",
    "POLICY_VIOLATED",
    "POLICY_RESOLVED",
    "DELIVERY_FAILING",
]
# a first token closes an open server: their test has a server of its own
TOKEN_KINDS = ["TOKEN_CREATED", "TOKEN_REVOKED"]
WEBHOOK = "id url events states format failing createdBy"
CREATE = (
    f"""mutation($input: CreateWebhookInput!) {{ createWebhook(input: $input) {{ {WEBHOOK} }} }}"""
)


def graphql(
    url: str, query: str, variables: dict[str, Any] | None = None, **headers: str
) -> dict[str, Any]:
    """The whole response body of a GraphQL call."""
    response = httpx.post(
        f"{url}/graphql", json={"query": query, "variables": variables or {}}, headers=headers
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def data(url: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    body = graphql(url, query, variables)
    assert "errors" not in body, body["errors"]
    found: dict[str, Any] = body["data"]
    return found


def create_webhook(
    server_url: str,
    url: str,
    events: list[str] | None = None,
    *,
    states: list[str] | None = None,
    form: str = "JSON",
    secret: str = SECRET,
) -> dict[str, Any]:
    given = {
        "url": url,
        "events": events or ["STATE_WRITTEN"],
        "states": states,
        "secret": secret,
        "format": form,
    }
    made: dict[str, Any] = data(server_url, CREATE, {"input": given})["createWebhook"]
    return made


def delete_webhooks(server_url: str) -> None:
    for hook in data(server_url, "{ webhooks { id } }")["webhooks"]:
        data(server_url, "mutation($id: ID!) { deleteWebhook(id: $id) { id } }", hook)


def signed(received: Received, secret: str = SECRET) -> bool:
    return verify(secret.encode(), received.body, received.headers["x-infragraph-signature-256"])


def post_state(server_url: str, name: str, body: bytes) -> None:
    response = httpx.post(
        f"{server_url}/states/{name}", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200, response.text


def server_on_own_database(env: Mapping[str, str | None]) -> Callable[..., Iterator[LiveServer]]:
    """A module's `server` fixture: the live server with `env`, on the module's database."""

    @pytest.fixture(scope="module")
    def server(own_database: str) -> Iterator[LiveServer]:
        with live_server(own_database, env) as running:
            yield running
            assert not running.server_errors(), running.log()

    return server
