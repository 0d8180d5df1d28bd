"""Deliveries through the real server to a receiver on loopback (allowed by the
settings): one signed delivery for each event kind, the body's fields, the Slack form,
and the deliveries as the API lists them."""

import httpx
import pytest

from tests.helpers.backend import lock_info
from tests.helpers.links import VPC_ID, network, remote
from tests.helpers.live_server import LiveServer
from tests.helpers.states import resource, state
from tests.helpers.webhook_receiver import Receiver, receiving
from tests.helpers.webhooks import (
    ALL_KINDS,
    FAST,
    SECRET,
    create_webhook,
    data,
    post_state,
    server_on_own_database,
    signed,
)

pytestmark = pytest.mark.slow  # starts servers of its own

ENV = {
    **FAST,
    "INFRAGRAPH_WEBHOOK_RETRY_FOR_S": "1.5",
    "INFRAGRAPH_WEBHOOK_LOCK_HELD_MINUTES": "0.01",  # 0.6 s
}


server = server_on_own_database(ENV)


def consumer(server: LiveServer, serial: int, instance_id: str) -> bytes:
    """A state reading team/net's outputs through this server."""
    return state(
        [
            remote("net", f"{server.url}/states/team%2Fnet", {"vpc_id": VPC_ID}),
            resource("aws_instance", "web", attributes={"id": instance_id}),
        ],
        serial=serial,
        lineage="app",
    )


CREATE_POLICY = """mutation($input: CreatePolicyInput!) { createPolicy(input: $input) { name } }"""


def test_each_kind_arrives_signed(server: LiveServer, receiver: Receiver) -> None:
    create_webhook(server.url, receiver.url, ALL_KINDS)
    with receiving(lambda r: 500) as refusing:
        create_webhook(server.url, refusing.url, ["STATE_WRITTEN"], states=["doomed/*"])
        post_state(server.url, "team/net", network())  # state written
        post_state(server.url, "team/app", consumer(server, 1, "i-1"))
        data(  # opens a violation in team/app
            server.url,
            CREATE_POLICY,
            {
                "input": {
                    "name": "no-i1",
                    "resourceType": "aws_instance",
                    "condition": '$.id == "i-1"',
                }
            },
        )
        post_state(server.url, "team/net", network(2, "vpc-0fffffffffffffff0"))  # app is stale
        post_state(server.url, "team/app", consumer(server, 2, "i-2"))  # resolves it
        lock = lock_info()
        locked = httpx.request("LOCK", f"{server.url}/states/team/locked", json=lock)
        assert locked.status_code == 200
        receiver.wait_for(lambda got: any(r.json["kind"] == "lock.held" for r in got))
        forced = httpx.request("UNLOCK", f"{server.url}/states/team/locked")
        assert forced.status_code == 200, forced.text
        post_state(server.url, "doomed/x", network())  # its delivery dies: failing
        kinds = {kind.lower().replace("_", ".", 1) for kind in ALL_KINDS}
        got = receiver.wait_for(lambda got: kinds <= {r.json["kind"] for r in got})
    assert all(signed(r) for r in got)
    assert not any(signed(r, SECRET + "x") for r in got)
    by_kind = {r.json["kind"]: r for r in reversed(got)}  # the first of each
    written = by_kind["state.written"]
    assert written.headers["x-infragraph-event"] == "state.written"
    assert written.headers["x-infragraph-delivery"] == written.json["delivery"]
    assert written.headers["x-infragraph-timestamp"] == str(written.json["sent_at"])
    assert written.json["state"] == "team/net" and written.json["actor"] == "anonymous"
    assert written.json["url"] == "/ui/state?name=team/net"
    assert by_kind["consumer.stale"].json["data"]["producer"] == "team/net"
    assert by_kind["policy.violated"].json["data"]["policy"] == "no-i1"
    assert by_kind["policy.resolved"].json["state"] == "team/app"
    assert by_kind["lock.held"].json["data"]["id"] == lock["ID"]
    assert by_kind["lock.force_released"].json["data"]["id"] == lock["ID"]
    failing = by_kind["delivery.failing"].json
    assert failing["state"] == "doomed/x" and failing["data"]["status"] == 500
    hooks = data(server.url, "{ webhooks { url failing } }")["webhooks"]
    assert {h["url"]: h["failing"] for h in hooks} == {receiver.url: False, refusing.url: True}
    # in order per state: team/net's writes as written
    serials = [
        r.json["serial"]
        for r in got
        if r.json["kind"] == "state.written" and r.json["state"] == "team/net"
    ]
    assert serials == [1, 2]
