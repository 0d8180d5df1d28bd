"""A delivery's body (pure): the event as JSON, or a Slack-compatible `{"text": ...}`.

JSON: `delivery` (the same on every attempt: a receiver deduplicates by it), `id` (the
event's), `kind`, `action`, `time`, `state`, `serial`, `actor`, `url` (the state's
dashboard page), `data` (the event's detail, credentials masked) and `sent_at` (Unix
seconds, also the timestamp header: the signature covers it, so a receiver can refuse
old replays).
"""

from datetime import datetime
from typing import Any
from urllib.parse import quote

from app import jsonutil
from app.secretnames import masked
from app.webhooks.kinds import EventKind

MAX_BODY_BYTES = 64 * 1024  # past it `data` is left out (`truncated`), the rest is sent
FORMATS = ("json", "slack")


def dashboard_url(base: str, state: str) -> str:
    """The state's dashboard page under `base` (the server's public URL; "" gives a path);
    the overview for an event of no state (a token's)."""
    if not state:
        return f"{base.rstrip('/')}/"
    return f"{base.rstrip('/')}/ui/state?name={quote(state, safe='/')}"


def event_document(
    *,
    delivery: str,
    event: dict[str, Any],
    kind: str,
    base_url: str,
    sent_at: int,
) -> dict[str, Any]:
    created: datetime = event["created_at"]
    return {
        "delivery": delivery,
        "id": str(event["id"]),
        "kind": kind,
        "action": event["action"],
        "time": created.isoformat(),
        "state": event["state_name"],
        "serial": event["serial"],
        "actor": event["actor"],
        "url": dashboard_url(base_url, event["state_name"]),
        "data": masked(event["detail"] or {}),
        "sent_at": sent_at,
    }


def _summary(document: dict[str, Any]) -> str:
    data = document["data"]
    if not isinstance(data, dict):
        return ""
    try:
        kind = EventKind(document["kind"])
    except ValueError:
        return ""
    if kind in (EventKind.POLICY_VIOLATED, EventKind.POLICY_RESOLVED):
        return f": policy {data.get('policy')} ({data.get('severity')}) at {data.get('count')}"
    if kind is EventKind.CONSUMER_STALE:
        return f": {data.get('producer')} changed {', '.join(data.get('outputs') or [])}"
    if kind in (EventKind.LOCK_HELD, EventKind.LOCK_FORCE_RELEASED):
        return f": lock {data.get('id')} of {data.get('who')}"
    if kind is EventKind.DELIVERY_FAILING:
        return f": webhook {data.get('url')} gave up on delivery {data.get('delivery')}"
    return ""


def slack_text(document: dict[str, Any]) -> str:
    """One line for a chat: what happened where, by whom, and a link (Slack's mrkdwn)."""
    serial = f" #{document['serial']}" if document["serial"] is not None else ""
    return (
        f"infragraph {document['kind']}: {document['state']}{serial} by {document['actor']}"
        f"{_summary(document)} <{document['url']}|open>"
    )


def render(document: dict[str, Any], form: str) -> bytes:
    """The body bytes in `form` (json or slack), at most MAX_BODY_BYTES of JSON data."""
    if form == "slack":
        return jsonutil.dumps({"text": slack_text(document)})
    body = jsonutil.dumps(document)
    if len(body) > MAX_BODY_BYTES:
        body = jsonutil.dumps({**document, "data": {"truncated": True}})
    return body
