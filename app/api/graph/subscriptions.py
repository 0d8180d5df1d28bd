"""The graph's subscription fields, a mixin of the root Subscription (see app/api/schema.py).

Served over graphql-transport-ws on /graphql (app.api.app); fed by app.graph.notify.
"""

from collections.abc import AsyncGenerator, Callable

import strawberry

from app.api.context import Context, Info
from app.api.graph.event import Event
from app.api.graph.rows import event_of
from app.db import Row
from app.graph.events import may_read_event


def visible(context: Context, state: str | None) -> Callable[[Row], bool]:
    """Whether an event goes to this subscriber: the one place a subscription filters.
    Only events of states the caller may read (app.access), and token events for those
    who manage tokens, as Query.events."""
    principal = context.principal
    return lambda row: (
        (state is None or row["state_name"] == state) and may_read_event(principal, row)
    )


@strawberry.type
class GraphSubscription:
    @strawberry.subscription(
        description="Events as they are committed, from any server on the database "
        "(writes, locks, unlocks, applies, ...): of one state, or of all."
    )
    async def events(self, info: Info, state: str | None = None) -> AsyncGenerator[Event, None]:
        wanted = visible(info.context, state)
        async with info.context.events.subscribe() as rows:
            async for row in rows:
                if wanted(row):
                    yield event_of(row)
