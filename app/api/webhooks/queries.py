"""The webhook root query fields, a mixin of the root Query (see app/api/schema.py)."""

import strawberry

from app.api.context import Info
from app.api.webhooks.types import Webhook, webhook_of
from app.webhooks import store


@strawberry.type
class WebhookQuery:
    @strawberry.field(description="Every webhook, oldest first (admin).")
    async def webhooks(self, info: Info) -> list[Webhook]:
        return [webhook_of(r) for r in await info.context.with_conn(store.list_webhooks)]
