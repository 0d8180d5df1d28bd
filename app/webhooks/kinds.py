"""The kinds of event a webhook subscribes to, and the event actions each stands for:
the one place that maps the `events` table's actions to webhook kinds (pure).

A new kind is one member and one entry of ACTIONS; its events reach webhooks as soon
as something inserts them (migration 0024's trigger). The server derives each
webhook's actions from its kinds again at start-up, so a kind that comes to stand for
more actions in a later release reaches the webhooks already subscribed to it.
"""

import enum
from collections.abc import Iterable


class EventKind(enum.Enum):
    STATE_WRITTEN = "state.written"
    LOCK_HELD = "lock.held"
    LOCK_FORCE_RELEASED = "lock.force_released"
    CONSUMER_STALE = "consumer.stale"
    POLICY_VIOLATED = "policy.violated"
    POLICY_RESOLVED = "policy.resolved"
    DELIVERY_FAILING = "delivery.failing"
    TOKEN_CREATED = "token.created"
    TOKEN_REVOKED = "token.revoked"  # by a revocation, or by its expiry
    PLAN_SUBMITTED = "plan.submitted"


# Actions the worker inserts itself (app/webhooks/worker.py).
LOCK_HELD_ACTION = "lock-held"
FAILING_ACTION = "webhook-failing"  # also named in migration 0024's trigger

ACTIONS: dict[EventKind, tuple[str, ...]] = {
    # a Terraform write, an IaC apply or release: each a new version of the state
    EventKind.STATE_WRITTEN: ("write", "apply", "release"),
    EventKind.LOCK_HELD: (LOCK_HELD_ACTION,),
    EventKind.LOCK_FORCE_RELEASED: ("force-unlock",),
    EventKind.CONSUMER_STALE: ("consumer-stale",),
    EventKind.POLICY_VIOLATED: ("policy-violated",),
    EventKind.POLICY_RESOLVED: ("policy-resolved",),
    EventKind.DELIVERY_FAILING: (FAILING_ACTION,),
    # app/tokens.py's events: their state name is empty, which only a webhook for every
    # state (no globs, or `*`) matches
    EventKind.TOKEN_CREATED: ("token-create",),
    EventKind.TOKEN_REVOKED: ("token-revoke", "token-expire"),
    EventKind.PLAN_SUBMITTED: ("plan-submitted",),
}

_KIND_OF = {action: kind for kind, actions in ACTIONS.items() for action in actions}


def actions_of(kinds: Iterable[EventKind]) -> list[str]:
    """The event actions `kinds` stand for, sorted, each once."""
    return sorted({action for kind in kinds for action in ACTIONS[kind]})


def kind_of(action: str) -> EventKind | None:
    """The kind an event action is; None for one no webhook can subscribe to."""
    return _KIND_OF.get(action)
