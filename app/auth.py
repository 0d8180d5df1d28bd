"""Who is calling: the API tokens of INFRAGRAPH_API_TOKENS ("name:token,...").

When tokens are configured, every HTTP and WebSocket request but health
(/livez, /readyz, /healthz) must carry one, as Basic auth (user = the
token's name, password = the token: what Terraform's `http` backend sends)
or as `Authorization: Bearer <token>`;
anything else gets 401. A websocket without the header passes as UNVERIFIED:
its first message carries the token (app.api.app checks it). The caller's
name lands on `request.state.actor` ("anonymous" on an open server) for
handlers and GraphQL resolvers to record.
"""

import base64
import binascii
import hmac
from collections.abc import Mapping

from starlette.datastructures import Headers
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from app.errors import Unauthenticated
from app.http import error_response

ANONYMOUS = "anonymous"
# A websocket that brought no header: not authenticated yet (no token name holds a ":")
UNVERIFIED = ":unverified"
OPEN_PATHS = frozenset({"/livez", "/readyz", "/healthz"})  # what probes and load balancers call
# WebSocket close code "policy violation": what a refused handshake gets
_WS_POLICY_VIOLATION = 1008


def _credentials(authorization: str | None) -> tuple[str | None, str] | None:
    """(user, secret) from a Basic or Bearer Authorization header (user None for Bearer)."""
    scheme, _, value = (authorization or "").strip().partition(" ")
    value = value.strip()
    if scheme.lower() == "bearer" and value:
        return None, value
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, secret = decoded.partition(":")
    return (user, secret) if sep else None


def authenticate(tokens: Mapping[str, str], authorization: str | None) -> str | None:
    """The name of the token the header carries, or None. `tokens` maps token -> name.

    Every token is compared, in constant time, so how long this takes says
    nothing about which token came close.
    """
    credentials = _credentials(authorization)
    if credentials is None:
        return None
    user, secret = credentials
    found = None
    for token, name in tokens.items():
        token_ok = hmac.compare_digest(secret.encode(), token.encode())
        user_ok = user is None or hmac.compare_digest(user.encode(), name.encode())
        if token_ok and user_ok:
            found = name
    return found


def actor(connection: HTTPConnection) -> str:
    """The authenticated caller's name (AuthMiddleware puts it there)."""
    name: str = connection.state.actor
    return name


class AuthMiddleware:
    """Pure ASGI (streams pass through untouched); open when `tokens` is empty."""

    def __init__(self, app: ASGIApp, tokens: Mapping[str, str]) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        name: str | None = ANONYMOUS
        if self.tokens and scope["path"] not in OPEN_PATHS:
            authorization = Headers(scope=scope).get("authorization")
            if scope["type"] == "websocket" and authorization is None:
                # Browsers cannot set headers on a websocket: /graphql authenticates
                # the graphql-transport-ws connection_init payload instead (app.api.app).
                name = UNVERIFIED
            else:
                name = authenticate(self.tokens, authorization)
        if name is None:
            await self._refuse(scope, receive, send)
            return
        scope.setdefault("state", {})["actor"] = name
        await self.app(scope, receive, send)

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": _WS_POLICY_VIOLATION})
            return
        response = error_response(
            Unauthenticated(
                "authentication required: Basic auth (user = token name, password = token) "
                "or a Bearer token"
            ),
            {"WWW-Authenticate": 'Basic realm="infragraph"'},
        )
        await response(scope, receive, send)
