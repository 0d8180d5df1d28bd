"""Token events as every server hears them (app.tokens writes them; the event feed,
app.graph.notify, brings those of every server), and the expiries recorded as events.

- Each token event drops this server's token cache (app.auth.TokenCache), so a token
  revoked through another server gets 401 here as soon as its event arrives.
- A websocket registers its caller (`watching`); a `token-revoke` or `token-expire` of
  that token, or the first `token-create` for a socket opened while the server was
  open, calls it back: app.api.ws closes the socket with 4403. The callback runs before
  the event feed hands the same events to subscriptions, so nothing committed after the
  revocation reaches the socket.
- `record_expiries` runs for the server's life: it writes a `token-expire` event for
  each token as it expires (each once, whichever server does it), sleeping until the
  next expiry it knows, at most EXPIRY_CHECK_S, and woken when a token is made.
"""

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import Callable, Iterator

from app import db, tokens
from app.access import ANONYMOUS, Principal
from app.auth import TokenCache
from app.db import Row
from app.graph.events import TOKEN_EVENTS
from app.observe import UNEXPECTED

log = logging.getLogger("infragraph.tokens")

EXPIRY_CHECK_S = 30.0  # the longest sleep between two looks for expired tokens
_LEAST_WAIT_S = 0.05  # and the shortest (a clock a hair behind the database's)
_ENDS = ("token-revoke", "token-expire")
_OPEN = ":open"  # the key of sockets opened on an open server (no token name holds ":")

Gone = Callable[[], None]


class TokenWatch:
    def __init__(self, pool: db.Pool, cache: TokenCache) -> None:
        self.pool = pool
        self.cache = cache
        self.watchers: defaultdict[str, set[Gone]] = defaultdict(set)
        self.made = asyncio.Event()  # a token was made: its expiry may be the next one

    def heard(self, row: Row) -> None:
        """An event committed by any server (the event feed's listener)."""
        if row["state_name"] != TOKEN_EVENTS:
            return
        self.cache.forget()
        if row["action"] == "token-create":
            self.made.set()
            ended = _OPEN  # the server is closed now, whatever it was
        elif row["action"] in _ENDS:
            ended = str(row["detail"].get("name"))
        else:
            return
        for gone in list(self.watchers.get(ended, ())):
            gone()

    @contextlib.contextmanager
    def watching(self, principal: Principal, gone: Gone) -> Iterator[None]:
        """Call `gone` when `principal` stops holding (its token revoked or expired; for
        ANONYMOUS, the server closed) until the block ends."""
        key = _OPEN if principal is ANONYMOUS else principal.name
        self.watchers[key].add(gone)
        try:
            yield
        finally:
            self.watchers[key].discard(gone)
            if not self.watchers[key]:
                del self.watchers[key]

    async def record_expiries(self) -> None:
        """Until cancelled: expiry events as tokens expire (app.tokens.record_expiries)."""
        while True:
            wait = EXPIRY_CHECK_S
            self.made.clear()
            try:
                async with db.connection(self.pool) as conn:
                    await tokens.record_expiries(conn)
                    due = await tokens.seconds_to_next_expiry(conn)
                if due is not None:
                    wait = min(max(due, _LEAST_WAIT_S), EXPIRY_CHECK_S)
            except db.ERROR_TYPES as exc:
                log.warning("token expiries: no database (%s); looking again later", exc)
            except Exception:  # a bug: logged, and the watch goes on
                UNEXPECTED.inc()
                log.exception("token expiries: unexpected error (a bug)")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.made.wait(), wait)
