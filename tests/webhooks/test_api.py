"""Webhooks through the API and the CLI of a live server: made, listed (never the
secret, which is stored sealed), changed, deleted; deliveries paged and redelivered;
the Slack form; the dashboard's page."""

import base64
import json
import os
from pathlib import Path

import asyncpg
import httpx
import pytest

from tests.helpers.backend import tf_state
from tests.helpers.cli import Cli
from tests.helpers.live_server import LiveServer
from tests.helpers.webhook_receiver import Receiver
from tests.helpers.webhooks import (
    FAST,
    SECRET,
    create_webhook,
    data,
    graphql,
    post_state,
    server_on_own_database,
    signed,
)

pytestmark = pytest.mark.slow  # runs the CLI in processes of its own

KEY = base64.b64encode(os.urandom(32)).decode()
PAGE = """query($first: Int!, $after: String) { webhooks { id deliveries(first: $first,
  after: $after) { totalCount pageInfo { hasNextPage endCursor }
  edges { node { id eventId kind stateName status attempts lastResponseCode deliveredAt } } } } }"""


server = server_on_own_database({**FAST, "INFRAGRAPH_ENCRYPTION_KEY": KEY})


async def test_the_secret_is_sealed_and_never_returned(
    server: LiveServer, receiver: Receiver, own_database: str
) -> None:
    made = create_webhook(server.url, receiver.url, ["STATE_WRITTEN", "POLICY_VIOLATED"])
    fields = data(server.url, '{ __type(name: "Webhook") { fields { name } } }')
    assert "secret" not in {f["name"] for f in fields["__type"]["fields"]}
    conn = await asyncpg.connect(own_database)
    try:
        stored = await conn.fetchval("SELECT secret FROM webhooks WHERE id = $1::uuid", made["id"])
    finally:
        await conn.close()
    assert stored[:1] == b"\x01" and SECRET.encode() not in stored  # sealed under the key
    post_state(server.url, "sealed/a", tf_state())
    [got] = receiver.wait_for(lambda got: len(got) == 1)
    assert signed(got)  # the worker opened it to sign


def test_update_delete_and_what_is_refused(server: LiveServer, receiver: Receiver) -> None:
    made = create_webhook(server.url, receiver.url, states=["team/*"])
    assert (made["events"], made["states"], made["format"]) == (
        ["STATE_WRITTEN"],
        ["team/*"],
        "JSON",
    )
    change = """mutation($input: UpdateWebhookInput!) { updateWebhook(input: $input) {
        events states format } }"""
    changed = data(
        server.url,
        change,
        {
            "input": {
                "id": made["id"],
                "events": ["CONSUMER_STALE"],
                "states": [],
                "format": "SLACK",
            }
        },
    )["updateWebhook"]
    assert changed == {"events": ["CONSUMER_STALE"], "states": None, "format": "SLACK"}
    for given, code in (
        ({"id": made["id"], "secret": "short"}, "BAD_INPUT"),
        ({"id": made["id"], "events": []}, "BAD_INPUT"),
        ({"id": "not-an-id"}, "BAD_INPUT"),
        ({"id": "00000000-0000-0000-0000-000000000000"}, "NOT_FOUND"),
        ({"id": made["id"], "url": "ftp://hooks.example/"}, "BAD_INPUT"),
    ):
        body = graphql(server.url, change, {"input": given})
        assert [e["extensions"]["code"] for e in body["errors"]] == [code], given
    gone = data(server.url, "mutation($id: ID!) { deleteWebhook(id: $id) { id } }", made)
    assert gone["deleteWebhook"]["id"] == made["id"]
    assert data(server.url, "{ webhooks { id } }")["webhooks"] == []


def test_deliveries_are_paged_and_redelivered(server: LiveServer, receiver: Receiver) -> None:
    made = create_webhook(server.url, receiver.url, states=["paged/*"])
    for serial in (1, 2, 3):
        post_state(server.url, "paged/a", tf_state(serial=serial))
    got = receiver.wait_for(lambda got: len(got) == 3)
    assert [r.json["serial"] for r in got] == [1, 2, 3]
    [hook] = data(server.url, PAGE, {"first": 2})["webhooks"]
    page = hook["deliveries"]
    assert page["totalCount"] == 3 and page["pageInfo"]["hasNextPage"]
    newest = page["edges"][0]["node"]
    assert (newest["kind"], newest["stateName"], newest["status"]) == (
        "STATE_WRITTEN",
        "paged/a",
        "DELIVERED",
    )
    assert (newest["attempts"], newest["lastResponseCode"]) == (1, 200)
    assert newest["id"] == got[2].delivery and newest["eventId"] == got[2].json["id"]
    [rest] = data(server.url, PAGE, {"first": 2, "after": page["pageInfo"]["endCursor"]})[
        "webhooks"
    ]
    assert [e["node"]["id"] for e in rest["deliveries"]["edges"]] == [got[0].delivery]
    again = data(
        server.url,
        "mutation($id: ID!) { redeliverWebhook(delivery: $id) { id eventId status } }",
        {"id": got[0].delivery},
    )["redeliverWebhook"]
    assert again["eventId"] == got[0].json["id"] and again["id"] != got[0].delivery
    [resent] = receiver.wait_for(lambda got: len(got) == 4)[3:]
    assert resent.delivery == again["id"] and resent.json["id"] == got[0].json["id"]
    assert made["id"] == hook["id"]


def test_the_slack_form(server: LiveServer, receiver: Receiver) -> None:
    create_webhook(server.url, receiver.url, states=["chat/*"], form="SLACK")
    post_state(server.url, "chat/a", tf_state())
    [got] = receiver.wait_for(lambda got: len(got) == 1)
    assert signed(got)
    assert got.json == {
        "text": "infragraph state.written: chat/a #1 by anonymous </ui/state?name=chat/a|open>"
    }


def test_the_cli(server: LiveServer, receiver: Receiver, tmp_path: Path) -> None:
    cli = Cli(server, tmp_path, token=None)
    cli.env["INFRAGRAPH_WEBHOOK_SECRET"] = SECRET
    code, out, err = cli(
        "webhook", "create", receiver.url, "--event", "state.written", "--state", "cli/*"
    )
    assert code == 0, err
    webhook_id = out.strip()
    post_state(server.url, "cli/a", tf_state())
    [got] = receiver.wait_for(lambda got: len(got) == 1)
    code, out, err = cli("webhook", "list")
    assert code == 0, err
    assert out.startswith(f"{webhook_id}  {receiver.url}  state.written  states cli/*  json\n")
    assert (
        f"    last: {got.delivery}  delivered  state.written  cli/a  1 attempt(s)  last 200" in out
    )
    assert SECRET not in out
    code, out, err = cli("webhook", "update", webhook_id, "--format", "slack", "--all-states")
    assert code == 0 and out.endswith("states *  slack\n"), err
    code, out, err = cli("webhook", "deliveries", webhook_id, "--json")
    assert code == 0 and [d["id"] for d in json.loads(out)] == [got.delivery], err
    code, out, err = cli("webhook", "redeliver", got.delivery)
    assert code == 0 and out.startswith("queued: "), err
    [_, again] = receiver.wait_for(lambda got: len(got) == 2)
    assert again.json["text"].startswith("infragraph state.written: cli/a #1")
    code, out, err = cli("webhook", "create", "ftp://hooks.example/", "--secret", SECRET)
    assert code == 1 and "must be https://" in err
    code, out, err = cli("webhook", "delete", webhook_id)
    assert (code, out) == (0, f"deleted: {receiver.url}\n"), err


def test_the_dashboard_page(server: LiveServer, receiver: Receiver) -> None:
    create_webhook(server.url, receiver.url, states=["ui/*"])
    post_state(server.url, "ui/a", tf_state())
    [got] = receiver.wait_for(lambda got: len(got) == 1)
    page = httpx.get(f"{server.url}/ui/webhooks", headers={"Accept": "text/html"})
    assert page.status_code == 200
    assert receiver.url in page.text and got.delivery in page.text
    assert "delivered" in page.text and SECRET not in page.text
