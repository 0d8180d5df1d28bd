"""`infragraph webhook ...`: webhooks through the API (admin)."""

from typing import Any

import click

from app.cli.common import JSON_OUTPUT, ask, json_text
from app.webhooks.kinds import EventKind

FIELDS = "id url events states format failing createdBy createdAt"
DELIVERY = "id kind stateName status attempts lastResponseCode lastError lastAttemptAt createdAt"
CREATE = (
    f"""mutation($input: CreateWebhookInput!) {{ createWebhook(input: $input) {{ {FIELDS} }} }}"""
)
UPDATE = (
    f"""mutation($input: UpdateWebhookInput!) {{ updateWebhook(input: $input) {{ {FIELDS} }} }}"""
)
DELETE = "mutation($id: ID!) { deleteWebhook(id: $id) { id url } }"
LIST = f"{{ webhooks {{ {FIELDS} deliveries(first: 1) {{ edges {{ node {{ {DELIVERY} }} }} }} }} }}"
DELIVERIES = f"""{{ webhooks {{ id deliveries(first: 1000) {{ totalCount
  edges {{ node {{ {DELIVERY} }} }} }} }} }}"""
REDELIVER = f"mutation($id: ID!) {{ redeliverWebhook(delivery: $id) {{ {DELIVERY} }} }}"

KINDS = [kind.value for kind in EventKind]
EVENT = click.option(
    "--event",
    "events",
    multiple=True,
    type=click.Choice(KINDS),
    help="An event kind it subscribes to (repeatable).",
)
STATES = click.option("--state", "states", multiple=True, help="A state-name glob (repeatable).")
FORMAT = click.option(
    "--format", "form", type=click.Choice(["json", "slack"]), help="The body: JSON or Slack text."
)


def _kinds(events: tuple[str, ...]) -> list[str]:
    """GraphQL's names of the kinds (STATE_WRITTEN for state.written)."""
    return [EventKind(e).name for e in events]


def _line(hook: dict[str, Any]) -> str:
    events = ",".join(EventKind[e].value for e in hook["events"])
    states = ",".join(hook["states"] or ["*"])
    failing = "  FAILING" if hook["failing"] else ""
    return (
        f"{hook['id']}  {hook['url']}  {events}  states {states}  {hook['format'].lower()}{failing}"
    )


def _delivery_line(d: dict[str, Any]) -> str:
    code = d["lastResponseCode"] if d["lastResponseCode"] is not None else "-"
    kind = EventKind[d["kind"]].value if d["kind"] else "?"
    error = f"  {d['lastError']}" if d["lastError"] else ""
    return (
        f"{d['id']}  {d['status'].lower()}  {kind}  {d['stateName']}  "
        f"{d['attempts']} attempt(s)  last {code} at {d['lastAttemptAt'] or 'never'}{error}"
    )


@click.group(help="Webhooks: POSTs to other systems on events (docs/webhooks.md). Admin only.")
def webhook() -> None:
    pass


@webhook.command("create", help="Subscribe a URL to events; prints the webhook's id.")
@click.argument("url")
@EVENT
@STATES
@FORMAT
@click.option(
    "--secret",
    envvar="INFRAGRAPH_WEBHOOK_SECRET",
    prompt=True,
    hide_input=True,
    help="The signing key (or INFRAGRAPH_WEBHOOK_SECRET; asked when neither is given).",
)
@JSON_OUTPUT
def create(
    url: str,
    events: tuple[str, ...],
    states: tuple[str, ...],
    form: str | None,
    secret: str,
    as_json: bool,
) -> None:
    given = {
        "url": url,
        "events": _kinds(events or (EventKind.STATE_WRITTEN.value,)),
        "states": list(states) or None,
        "secret": secret,
        "format": (form or "json").upper(),
    }
    made = ask(CREATE, {"input": given}, "createWebhook")
    click.echo(json_text(made) if as_json else made["id"])


@webhook.command("list", help="The webhooks and how each one's last delivery went.")
@JSON_OUTPUT
def list_webhooks(as_json: bool) -> None:
    found = ask(LIST, {}, "webhooks")
    if as_json:
        click.echo(json_text(found))
        return
    for hook in found:
        edges = hook["deliveries"]["edges"]
        last = _delivery_line(edges[0]["node"]) if edges else "no delivery yet"
        click.echo(f"{_line(hook)}\n    last: {last}")


@webhook.command("update", help="Change a webhook: what is given replaces what it had.")
@click.argument("webhook_id")
@click.option("--url")
@EVENT
@STATES
@click.option("--all-states", is_flag=True, help="Every state again (no glob).")
@FORMAT
@click.option("--secret", envvar="INFRAGRAPH_WEBHOOK_SECRET", help="A new signing key.")
def update(
    webhook_id: str,
    url: str | None,
    events: tuple[str, ...],
    states: tuple[str, ...],
    all_states: bool,
    form: str | None,
    secret: str | None,
) -> None:
    given: dict[str, Any] = {"id": webhook_id, "url": url, "secret": secret}
    if events:
        given["events"] = _kinds(events)
    if states or all_states:
        given["states"] = [] if all_states else list(states)
    if form:
        given["format"] = form.upper()
    click.echo(_line(ask(UPDATE, {"input": given}, "updateWebhook")))


@webhook.command("delete", help="Delete a webhook and its deliveries.")
@click.argument("webhook_id")
def delete(webhook_id: str) -> None:
    gone = ask(DELETE, {"id": webhook_id}, "deleteWebhook")
    click.echo(f"deleted: {gone['url']}")


@webhook.command("deliveries", help="A webhook's deliveries, newest first.")
@click.argument("webhook_id")
@JSON_OUTPUT
def deliveries(webhook_id: str, as_json: bool) -> None:
    hooks = [h for h in ask(DELIVERIES, {}, "webhooks") if h["id"] == webhook_id]
    if not hooks:
        raise click.ClickException(f"no webhook {webhook_id}")
    nodes = [e["node"] for e in hooks[0]["deliveries"]["edges"]]
    if as_json:
        click.echo(json_text(nodes))
        return
    for node in nodes:
        click.echo(_delivery_line(node))


@webhook.command("redeliver", help="Send a delivery's event again (a new delivery).")
@click.argument("delivery_id")
def redeliver(delivery_id: str) -> None:
    again = ask(REDELIVER, {"id": delivery_id}, "redeliverWebhook")
    click.echo(f"queued: {again['id']}")
