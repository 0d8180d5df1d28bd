"""Where a webhook may not send, through the real server: metadata and loopback
addresses, names resolving to them, http://; refused when the webhook is made and
again when a delivery is sent (the address the name has then)."""

from collections.abc import Iterator

import pytest

from tests.helpers.live_server import LiveServer, live_server
from tests.helpers.waiting import wait_until_sync
from tests.helpers.webhook_receiver import receiving
from tests.helpers.webhooks import FAST, SECRET, create_webhook, data, graphql, post_state

pytestmark = pytest.mark.slow  # starts servers of its own

CREATE = """mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { id } }"""
DELIVERIES = """{ webhooks { deliveries(first: 5) { edges { node {
    status attempts lastResponseCode lastError } } } } }"""


@pytest.fixture(scope="module")
def strict(own_database: str) -> Iterator[LiveServer]:
    """A server allowing http:// but no internal address."""
    with live_server(own_database, {**FAST, "INFRAGRAPH_WEBHOOK_ALLOW_PRIVATE": None}) as server:
        yield server


def _refusal(url: str, target: str) -> str:
    given = {"url": target, "events": ["STATE_WRITTEN"], "secret": SECRET}
    body = graphql(url, CREATE, {"input": given})
    assert body["data"] is None
    [error] = body["errors"]
    assert error["extensions"]["code"] == "BAD_INPUT"
    message: str = error["message"]
    return message


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("https://169.254.169.254/", "link-local"),
        ("https://localhost/hook", "loopback"),  # a name resolving to 127.0.0.1
        ("https://127.0.0.1:8443/hook", "loopback"),
        ("https://[::1]/hook", "loopback"),
        ("https://[::ffff:10.0.0.1]/hook", "private"),
        ("https://10.1.2.3/hook", "private"),
        ("https://192.168.1.1/hook", "private"),
        ("https://0.0.0.0/hook", "unspecified"),
        ("https://100.64.0.1/hook", "not public"),  # carrier-grade NAT
    ],
)
def test_internal_destinations_are_refused_without_the_setting(
    strict: LiveServer, target: str, why: str
) -> None:
    assert f"a {why} address: refused" in _refusal(strict.url, target)
    assert data(strict.url, "{ webhooks { id } }")["webhooks"] == []


def test_http_is_refused_without_the_setting(own_database: str) -> None:
    env = {**FAST, "INFRAGRAPH_WEBHOOK_ALLOW_HTTP": None}
    with live_server(own_database, env) as server:
        assert "must be https://" in _refusal(server.url, "http://127.0.0.1:9/hook")
        assert "credentials" in _refusal(server.url, "https://u:p@127.0.0.1/hook")
        assert "https://127.0.0.1:9/hook" in str(
            create_webhook(server.url, "https://127.0.0.1:9/hook")
        )


def test_a_delivery_to_a_loopback_address_is_refused_when_sent(own_database: str) -> None:
    """Made where loopback was allowed, sent by a server where it is not: the address is
    checked again for each attempt, so a name that later resolves inside gets nothing."""
    with receiving() as receiver:
        with live_server(own_database, FAST) as allowing:
            for hook in data(allowing.url, "{ webhooks { id } }")["webhooks"]:
                data(allowing.url, "mutation($id: ID!) { deleteWebhook(id: $id) { id } }", hook)
            create_webhook(allowing.url, receiver.url)
        env = {**FAST, "INFRAGRAPH_WEBHOOK_ALLOW_PRIVATE": None}
        with live_server(own_database, env) as refusing:
            post_state(refusing.url, "team/x", b'{"version": 4, "serial": 1, "lineage": "l"}')

            def tried_twice() -> list[dict] | None:
                [hook] = data(refusing.url, DELIVERIES)["webhooks"]
                nodes = [e["node"] for e in hook["deliveries"]["edges"]]
                return nodes if nodes and nodes[0]["attempts"] >= 2 else None

            nodes = wait_until_sync(tried_twice, "a delivery tried twice", within=20, interval=0.1)
        assert "loopback address: refused" in nodes[0]["lastError"]
        assert nodes[0]["lastResponseCode"] is None
        assert receiver.received == []
