"""Nothing lost, nothing doubled without a failure: the receiver down, then the server
SIGKILLed with deliveries queued, then both back (every event arrives, repeated only
under its delivery id, in order per state); and two server processes on one database
sending each delivery once."""

import re
import time
from collections import defaultdict

import httpx
import pytest

from tests.helpers.backend import tf_state
from tests.helpers.live_server import LiveServer, free_port, live_server
from tests.helpers.waiting import wait_until_sync
from tests.helpers.webhook_receiver import Received, receiving
from tests.helpers.webhooks import FAST, create_webhook, data, delete_webhooks, post_state

pytestmark = pytest.mark.slow

STATES = ("a/one", "a/two", "b/three")
SERIALS = 8
# an attempt gives up after 1 s: a claim of a killed server is free again after 7 s
ENV = {**FAST, "INFRAGRAPH_WEBHOOK_TIMEOUT_S": "1"}
PENDING = """{ webhooks { deliveries(first: 1000) { totalCount edges { node {
    status attempts } } } } }"""


def _write_all(servers: list[LiveServer], prefix: str) -> None:
    """SERIALS versions of each state (under `prefix`), the writes spread over `servers`."""
    for serial in range(1, SERIALS + 1):
        for index, state in enumerate(STATES):
            server = servers[(serial + index) % len(servers)]
            name = f"{prefix}/{state}"
            post_state(server.url, name, tf_state(serial=serial, value=f"{name}-{serial}"))


def _check(got: list[Received]) -> None:
    """Every write once (by event), repeated only under one delivery id, in order per state."""
    deliveries_of: dict[str, set[str]] = defaultdict(set)
    serials_of: dict[str, list[int]] = defaultdict(list)
    for received in got:
        deliveries_of[received.json["id"]].add(received.delivery)
        serials_of[received.json["state"]].append(received.json["serial"])
    assert len(deliveries_of) == len(STATES) * SERIALS
    assert all(len(ids) == 1 for ids in deliveries_of.values())
    assert len(serials_of) == len(STATES)
    for name, arrived in serials_of.items():
        assert sorted(set(arrived)) == list(range(1, SERIALS + 1)), (name, arrived)
        assert arrived == sorted(arrived), (name, arrived)  # a repeat comes before the next


def _sent(server: LiveServer) -> int:
    """The deliveries the server's worker recorded as taken."""
    text = httpx.get(f"{server.url}/metrics").text
    found = re.search(
        r'^infragraph_webhook_deliveries_total\{outcome="delivered"\} (\S+)$', text, re.M
    )
    return int(float(found.group(1))) if found else 0


def _all_events(got: list[Received]) -> bool:
    return len({r.json["id"] for r in got}) >= len(STATES) * SERIALS


def test_nothing_lost_when_the_receiver_is_down_and_the_server_killed(
    own_database: str,
) -> None:
    port = free_port()
    received: list[Received] = []
    with live_server(own_database, ENV) as first:
        delete_webhooks(first.url)
        create_webhook(first.url, f"http://127.0.0.1:{port}/hook")
        _write_all([first], "killed")

        def each_tried() -> tuple[dict, list[dict]] | None:
            [hook] = data(first.url, PENDING)["webhooks"]
            nodes = [e["node"] for e in hook["deliveries"]["edges"]]
            tried = [n for n in nodes if n["attempts"] >= 2]
            return (hook, nodes) if len(tried) >= len(STATES) else None

        # the receiver is down: each tried, and failing
        hook, nodes = wait_until_sync(
            each_tried, "every delivery tried twice", within=30, interval=0.2
        )
        assert all(n["status"] == "PENDING" for n in nodes)
        assert hook["deliveries"]["totalCount"] == len(STATES) * SERIALS
        first.kill()
        with (
            receiving(port=port, received=received) as receiver,
            live_server(own_database, ENV) as second,
        ):
            try:
                got = receiver.wait_for(_all_events, timeout=60)
            except AssertionError:
                print(second.log()[-5000:])
                raise
            _check(got)
            delete_webhooks(second.url)


def test_two_servers_send_each_delivery_once(own_database: str) -> None:
    with live_server(own_database, ENV) as one, live_server(own_database, ENV) as two:
        delete_webhooks(one.url)
        with receiving() as receiver:
            create_webhook(one.url, receiver.url)
            _write_all([one, two], "shared")
            got = receiver.wait_for(_all_events, timeout=60)
            time.sleep(1.0)  # a double send would arrive by now
            got = list(receiver.received)
            _check(got)
            assert len(got) == len(STATES) * SERIALS  # not one repeat
            # and the senders count as many, between them
            assert _sent(one) + _sent(two) == len(STATES) * SERIALS
        delete_webhooks(one.url)
