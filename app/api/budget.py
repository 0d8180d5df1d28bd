"""What a token may spend on GraphQL over time, and the meter around each operation.

A token's budget is a bucket of cost units (app.api.cost: a node, or a KiB of
answer) that refills at `token_budget / token_budget_seconds` a second, up to
`token_budget`. An operation is refused (LIMIT_EXCEEDED, with the figures) before it
runs when its estimate is more than the bucket holds; once it ran, what it cost (its
estimated nodes, its metered bytes) is taken out.

The buckets are kept in process, per server: no statement per operation (a request
costs a few microseconds here, a round trip would cost more than the whole check),
and nothing to clean up. With several servers behind one address a token may spend
a budget on each: size INFRAGRAPH_TOKEN_BUDGET for one server's share.
"""

import math
import time
from dataclasses import dataclass

from app.errors import LimitExceeded


@dataclass
class _Bucket:
    level: float
    at: float


class TokenBudgets:
    """The buckets of the tokens (by principal name) of one server."""

    def __init__(self, budget: int, seconds: float) -> None:
        self.budget = budget
        self.rate = budget / seconds if seconds > 0 else math.inf
        self._buckets: dict[str, _Bucket] = {}

    def _bucket(self, who: str, now: float) -> _Bucket:
        bucket = self._buckets.get(who)
        if bucket is None:
            bucket = self._buckets[who] = _Bucket(float(self.budget), now)
        elif bucket.at < now:
            bucket.level = min(self.budget, bucket.level + (now - bucket.at) * self.rate)
            bucket.at = now
        return bucket

    def check(self, who: str, units: int, now: float | None = None) -> None:
        """Refuse an operation estimated at `units` that `who`'s bucket cannot pay."""
        if self.budget <= 0:
            return
        level = self._bucket(who, time.monotonic() if now is None else now).level
        if units > level:
            wait = math.ceil((min(units, self.budget) - level) / self.rate)
            raise LimitExceeded(
                f"the token's budget holds {max(0, int(level))} of {self.budget} cost units "
                f"(refilled at {self.rate:g} a second); this query is estimated at {units}: "
                f"retry in {wait} s, or ask for less",
                {"units": units, "left": max(0, int(level)), "budget": self.budget,
                 "retryAfter": wait},
            )  # fmt: skip

    def charge(self, who: str, units: int, now: float | None = None) -> None:
        """Take what an operation cost out of `who`'s bucket (it may go below zero: the
        next operations wait until it has refilled)."""
        if self.budget > 0:
            self._bucket(who, time.monotonic() if now is None else now).level -= units
