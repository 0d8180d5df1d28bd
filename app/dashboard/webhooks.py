"""The dashboard's webhooks page (admin): each webhook and its last deliveries, in a
fixed number of statements."""

from dataclasses import dataclass

import asyncpg

from app.access import Principal, Role
from app.paging import EMPTY
from app.webhooks import store
from app.webhooks.kinds import EventKind, kind_of

LAST_DELIVERIES = 10


@dataclass(frozen=True)
class WebhookEntry:
    webhook: asyncpg.Record
    deliveries: list[asyncpg.Record]  # newest first
    total: int  # deliveries in all

    def kind(self, action: str | None) -> str:
        kind = kind_of(action) if action else None
        return kind.value if isinstance(kind, EventKind) else action or "?"


async def webhooks_page(conn: asyncpg.Connection, caller: Principal) -> list[WebhookEntry]:
    caller.require(Role.ADMIN, "see webhooks")
    hooks = await store.list_webhooks(conn)
    pages = await store.list_deliveries(conn, [h["id"] for h in hooks], first=LAST_DELIVERIES)
    return [
        WebhookEntry(h, pages.get(h["id"], EMPTY).rows, pages.get(h["id"], EMPTY).total or 0)
        for h in hooks
    ]
