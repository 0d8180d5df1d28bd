"""The websocket side of /graphql (graphql-transport-ws): who is on a socket, kept true
for as long as it is open.

- A socket that came without an Authorization header (UNVERIFIED) shows its token in
  connection_init within UNVERIFIED_INIT_WAIT, else it is closed (4408); a token that
  does not hold closes it at once (4403). Nobody holds a descriptor for long unasked.
- Every operation (a `subscribe` message) identifies the caller again, as a request
  would be (app.auth.identify: revoked, expired, or the server closed since it opened).
- While it is open, app.token_watch calls back when its token is revoked or expires
  (the event, from whichever server): from then on the socket sends nothing, and it is
  closed with 4403.
"""

import asyncio
import contextlib
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from starlette.websockets import WebSocketDisconnect, WebSocketState
from strawberry.asgi import ASGIWebSocketAdapter
from strawberry.http.exceptions import WebSocketDisconnected
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
)
from strawberry.subscriptions.protocols.graphql_transport_ws.types import (
    ConnectionInitMessage,
    SubscribeMessage,
)

from app import db, jsonutil
from app.access import UNVERIFIED
from app.api.context import Context
from app.auth import identify
from app.errors import Forbidden, Unauthenticated, Unavailable
from app.token_watch import TokenWatch

# A socket that brought a token in its header: time to send connection_init.
CONNECTION_INIT_WAIT = timedelta(seconds=10)
# One that brought none: it must show one in connection_init, and soon.
UNVERIFIED_INIT_WAIT = timedelta(seconds=1.5)
GONE_CODE = 4403  # graphql-transport-ws's "Forbidden", what a refused connection_init gets
_MAX_CLOSE_REASON = 123  # bytes, RFC 6455
_GONE_REASON = "the token is revoked or expired, or no longer accepted"


class TextWebSocket(ASGIWebSocketAdapter):
    """Messages as text frames, what graphql-transport-ws clients read (encode_json's
    bytes would go as binary ones); nothing at all once its caller is gone."""

    gone = False
    context: Context | None = None  # its handler's

    async def close(self, code: int, reason: str) -> None:
        refusal = self.context.refusal if self.context is not None else None
        if refusal:  # a close reason holds at most 123 bytes
            reason = refusal.encode()[:_MAX_CLOSE_REASON].decode(errors="ignore")
        await super().close(code, reason)

    async def send_json(self, message: Mapping[str, object]) -> None:
        if self.gone:
            return
        try:
            await self.ws.send_text(jsonutil.dumps(message).decode())
        except WebSocketDisconnect as exc:
            raise WebSocketDisconnected from exc


class WatchedHandler(BaseGraphQLTransportWSHandler[Context, None]):
    """graphql-transport-ws, its caller checked on each operation and watched between."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.context.principal is UNVERIFIED:
            self.connection_init_wait_timeout = UNVERIFIED_INIT_WAIT
        self.watched = contextlib.ExitStack()
        self.socket.context = self.context
        self.closing: asyncio.Task[None] | None = None

    @property
    def socket(self) -> TextWebSocket:
        socket = self.websocket
        assert isinstance(socket, TextWebSocket)
        return socket

    async def handle_connection_init(self, message: ConnectionInitMessage) -> None:
        await super().handle_connection_init(message)
        if self.connection_acknowledged and not self.socket.gone:
            watch: TokenWatch = self.context.request.app.state.token_watch
            self.watched.enter_context(watch.watching(self.context.principal, self.gone))

    async def handle_subscribe(self, message: SubscribeMessage) -> None:
        if self.socket.gone:
            return
        if self.connection_acknowledged:
            try:
                await identify(
                    self.view.tokens,  # type: ignore[attr-defined]  # GraphQLApp's
                    self.context.token_cache,
                    self.context.authorization,
                )
            except (Unauthenticated, Forbidden, Unavailable, *db.ERROR_TYPES):
                self.gone()
                return
        await super().handle_subscribe(message)

    def gone(self) -> None:
        """The caller no longer holds: send nothing more, and close."""
        if self.socket.gone:
            return
        self.socket.gone = True
        self.closing = asyncio.create_task(self._close())

    async def _close(self) -> None:
        if self.socket.ws.application_state == WebSocketState.CONNECTED:
            with contextlib.suppress(RuntimeError, WebSocketDisconnect):  # closed meanwhile
                await self.socket.close(GONE_CODE, _GONE_REASON)

    async def shutdown(self) -> None:
        self.watched.close()
        await super().shutdown()
        if self.closing is not None:
            await self.closing
