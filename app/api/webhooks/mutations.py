"""The webhook mutations (admin), a mixin of the root Mutation (see app/api/schema.py)."""

import strawberry

from app.api.context import Info
from app.api.webhooks.types import (
    CreateWebhookInput,
    UpdateWebhookInput,
    Webhook,
    WebhookDelivery,
    delivery_of,
    uuid_of,
    webhook_of,
)
from app.webhooks import store
from app.webhooks.destination import resolve


@strawberry.type
class WebhookMutation:
    @strawberry.mutation(
        description="Subscribe a URL to events; refused for a URL it may not send to "
        "(checked on the addresses its name resolves to)."
    )
    async def create_webhook(self, info: Info, input: CreateWebhookInput) -> Webhook:
        await resolve(input.url, info.context.settings.webhooks)
        row = await info.context.with_conn(
            store.create_webhook,
            url=input.url,
            kinds=list(input.events),
            states=input.states,
            secret=input.secret,
            form=input.format.value,
            created_by=info.context.actor,
        )
        return webhook_of(row)

    @strawberry.mutation(description="Change a webhook.")
    async def update_webhook(self, info: Info, input: UpdateWebhookInput) -> Webhook:
        if input.url is not None:
            await resolve(input.url, info.context.settings.webhooks)
        row = await info.context.with_conn(
            store.update_webhook,
            uuid_of(input.id, "webhook"),
            url=input.url,
            kinds=list(input.events) if input.events is not None else None,
            states=input.states,
            secret=input.secret,
            form=input.format.value if input.format is not None else None,
        )
        return webhook_of(row)

    @strawberry.mutation(description="Delete a webhook and its deliveries, sent or not.")
    async def delete_webhook(self, info: Info, id: strawberry.ID) -> Webhook:
        row = await info.context.with_conn(store.delete_webhook, uuid_of(id, "webhook"))
        return webhook_of(row)

    @strawberry.mutation(
        description="Send a delivery's event to its webhook again, as a new delivery."
    )
    async def redeliver_webhook(self, info: Info, delivery: strawberry.ID) -> WebhookDelivery:
        row = await info.context.with_conn(store.redeliver, uuid_of(delivery, "delivery"))
        return delivery_of(row)
