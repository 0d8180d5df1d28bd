"""The webhook GraphQL types: a webhook (never its secret) and its deliveries."""

import enum
import itertools
from datetime import datetime
from typing import Any
from uuid import UUID

import strawberry
from strawberry.dataloader import DataLoader

from app.api.context import Info
from app.api.pagination import DEFAULT_FIRST, AfterArg, Connection, FirstArg, connection, page_args
from app.db import Row
from app.errors import BadInput
from app.paging import EMPTY, Page
from app.webhooks import store
from app.webhooks.kinds import EventKind, kind_of

strawberry.enum(
    EventKind,
    name="WebhookEvent",
    description="A kind of event a webhook subscribes to (docs/webhooks.md lists what each sends).",
)
WebhookEvent = EventKind


@strawberry.enum(description="What a delivery's body is.")
class WebhookFormat(enum.Enum):
    JSON = "json"  # the event, signed (docs/webhooks.md)
    SLACK = "slack"  # {"text": "..."}: a Slack-compatible incoming-webhook message


@strawberry.enum(description="Where a delivery is.")
class DeliveryStatus(enum.Enum):
    PENDING = "pending"  # not yet taken by the receiver: queued, or waiting to retry
    DELIVERED = "delivered"  # the receiver answered 2xx
    DEAD = "dead"  # retried for INFRAGRAPH_WEBHOOK_RETRY_FOR_S (24 h) in vain


def uuid_of(value: str, what: str) -> UUID:
    try:
        return UUID(str(value))
    except ValueError:
        raise BadInput(f"{value!r} is not a {what} id") from None


@strawberry.type(description="One event sent (or to send) to one webhook.")
class WebhookDelivery:
    id: strawberry.ID = strawberry.field(
        description="Sent as X-Infragraph-Delivery: the same on every attempt."
    )
    event_id: strawberry.ID
    kind: WebhookEvent | None
    state_name: str
    status: DeliveryStatus
    attempts: int
    last_response_code: int | None = strawberry.field(
        description="The receiver's HTTP status at the last attempt; null when none came."
    )
    last_error: str | None
    last_attempt_at: datetime | None
    next_attempt_at: datetime | None = strawberry.field(description="Null unless pending.")
    created_at: datetime
    delivered_at: datetime | None


def delivery_of(r: Row) -> WebhookDelivery:
    status = DeliveryStatus(r["status"])
    return WebhookDelivery(
        id=strawberry.ID(str(r["id"])),
        event_id=strawberry.ID(str(r["event_id"])),
        kind=kind_of(r["action"]) if r["action"] is not None else None,
        state_name=r["state_name"],
        status=status,
        attempts=r["attempts"],
        last_response_code=r["last_status"],
        last_error=r["last_error"],
        last_attempt_at=r["last_attempt_at"],
        next_attempt_at=r["next_attempt_at"] if status is DeliveryStatus.PENDING else None,
        created_at=r["created_at"],
        delivered_at=r["delivered_at"],
    )


@strawberry.type(description="An HTTP endpoint told of the events it subscribed to.")
class Webhook:
    id: strawberry.ID
    url: str
    events: list[WebhookEvent]
    states: list[str] | None = strawberry.field(
        description="Globs over state names (`*` any run, `?` one character); null: every state."
    )
    format: WebhookFormat
    failing: bool = strawberry.field(
        description="A delivery died (retried 24 h in vain); cleared by the next one taken."
    )
    created_by: str
    created_at: datetime
    updated_at: datetime
    key: strawberry.Private[UUID]

    @strawberry.field(description="Its deliveries, newest first.")
    async def deliveries(
        self, info: Info, first: FirstArg = DEFAULT_FIRST, after: AfterArg = None
    ) -> Connection[WebhookDelivery]:
        args = page_args(first, after, store.DELIVERY_KEY)
        page = await _deliveries_loader(info).load((self.key, args.first, args.after))
        return connection(page, [delivery_of(r) for r in page.rows], after=after)


# (webhook id, first, after): the pages of one request load in a statement per page size
DeliveriesKey = tuple[UUID, int, tuple[Any, ...] | None]


def _deliveries_loader(info: Info) -> DataLoader[DeliveriesKey, Page[Any]]:
    """The request's loader of delivery pages (kept on the request, made on first use)."""
    state = info.context.request.state
    loader: DataLoader[DeliveriesKey, Page[Any]] | None = getattr(state, "webhook_deliveries", None)
    if loader is None:

        async def load(keys: list[DeliveriesKey]) -> list[Page[Any]]:
            pages: dict[DeliveriesKey, Page[Any]] = {}
            for (first, after), group in itertools.groupby(
                sorted(set(keys), key=lambda k: (k[1], repr(k[2]))), key=lambda k: (k[1], k[2])
            ):
                ids = [key[0] for key in group]
                found = await info.context.with_conn(
                    store.list_deliveries, ids, first=first, after=after
                )
                pages.update({(i, first, after): found.get(i, EMPTY) for i in ids})
            return [pages[key] for key in keys]

        loader = DataLoader(load_fn=load)
        state.webhook_deliveries = loader
    return loader


def webhook_of(r: Row) -> Webhook:
    return Webhook(
        id=strawberry.ID(str(r["id"])),
        url=r["url"],
        events=[EventKind(e) for e in r["events"] if e in EventKind._value2member_map_],
        states=r["states"],
        format=WebhookFormat(r["format"]),
        failing=r["failing"],
        created_by=r["created_by"],
        created_at=r["created_at"],
        updated_at=r["updated_at"],
        key=r["id"],
    )


@strawberry.input
class CreateWebhookInput:
    url: str = strawberry.field(
        description="https:// (http:// only with INFRAGRAPH_WEBHOOK_ALLOW_HTTP=1), at a public "
        "address (others only with INFRAGRAPH_WEBHOOK_ALLOW_PRIVATE=1)."
    )
    events: list[WebhookEvent]
    secret: str = strawberry.field(
        description="The HMAC-SHA256 key of X-Infragraph-Signature-256 (16 characters or "
        "more). Stored sealed; never returned."
    )
    states: list[str] | None = strawberry.field(
        default=None, description="Globs over state names; null or empty: every state."
    )
    format: WebhookFormat = WebhookFormat.JSON


@strawberry.input(description="What is given changes; what is left out stays.")
class UpdateWebhookInput:
    id: strawberry.ID
    url: str | None = None
    events: list[WebhookEvent] | None = None
    secret: str | None = None
    states: list[str] | None = strawberry.field(
        default=None, description="Globs over state names; empty: every state."
    )
    format: WebhookFormat | None = None
