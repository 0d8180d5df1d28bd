"""Who is calling: a token of INFRAGRAPH_API_TOKENS ("name:token,...": admins, the
bootstrap) or of the database (app/tokens.py: a role and what it touches).

The server is open (every caller is ANONYMOUS, an admin) only on its first run: while
no bootstrap token is configured and no token has ever existed in the database
(migration 0019's access_closed, which the first token of either kind writes). From
then on it fails closed: every HTTP and WebSocket request but health (/livez, /readyz,
/healthz) must carry a live token, as Basic auth (user = the token's name, password =
the token: what Terraform's `http` backend sends) or as `Authorization: Bearer
<token>`; anything else, and an expired or revoked token, gets 401, even once every
token is revoked or expired (then only a bootstrap token, set and the server restarted,
gets in). A websocket without the header (browsers cannot set one) passes as
UNVERIFIED, which touches nothing: its connection_init payload carries the token,
which app.api.app identifies the same way. The caller lands on
`request.state.principal` (app.access) and its name on `request.state.actor`, which
every event records.

A database token is looked up by its hash once per TOKEN_CACHE_SECONDS per process,
not per request (the lookup also brings last_used_at up to date, at most once a
minute). Revoking a token through a server drops that server's cache at once; the
others drop theirs when the revocation's event reaches them (app.token_watch), or
within TOKEN_CACHE_SECONDS if their event feed is down. Expiry is checked on every
request.
"""

import base64
import binascii
import hmac
import time
from collections.abc import Mapping
from datetime import UTC, datetime

from starlette.datastructures import Headers
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from app import db, tokens
from app.access import ANONYMOUS, UNVERIFIED, Principal, bootstrap
from app.errors import AppError, Forbidden, Unauthenticated, Unavailable
from app.graph import events
from app.http import error_response
from app.oidc import exchange
from app.oidc.verify import BASIC_USER, Verifier, looks_like_jwt

# what probes and load balancers call, and the OIDC exchange (which verifies its own)
OPEN_PATHS = frozenset({"/livez", "/readyz", "/healthz", "/auth/oidc/token"})
# WebSocket close code "policy violation": what a refused handshake gets
_WS_POLICY_VIOLATION = 1008


def credentials(authorization: str | None) -> tuple[str | None, str] | None:
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
    return (user, secret) if sep and secret else None


def authenticate(tokens: Mapping[str, str], authorization: str | None) -> str | None:
    """The name of the token the header carries, or None. `tokens` maps token -> name.

    Every token is compared, in constant time, so how long this takes says
    nothing about which token came close.
    """
    shown = credentials(authorization)
    if shown is None:
        return None
    user, secret = shown
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


def principal(connection: HTTPConnection) -> Principal:
    """The authenticated caller (AuthMiddleware puts it there)."""
    found: Principal = connection.state.principal
    return found


_MAX_CACHED = 10_000  # tokens; past it the cache starts over


class TokenCache:
    """Database tokens by hash, each for `ttl` seconds, and whether the server is closed.

    It holds the pool it was made with (the app's), so its statements are not the
    request's (tests/api/test_sql_count.py counts those)."""

    def __init__(self, pool: db.Pool, ttl: float) -> None:
        self.pool = pool
        self.ttl = ttl
        self.found: dict[bytes, tuple[float, tokens.Found]] = {}
        self.closed: tuple[float, bool] | None = None
        self.oidc: Verifier | None = None  # trusted OIDC issuers (INFRAGRAPH_OIDC_CONFIG)

    def forget(self) -> None:
        """After a token is made or revoked (here, or heard of from the event feed)."""
        self.found.clear()
        self.closed = None

    async def find(self, token: str) -> tokens.Found | None:
        key = tokens.token_hash(token)
        now = time.monotonic()
        cached = self.found.get(key)
        if cached is not None and now - cached[0] < self.ttl:
            return cached[1]
        async with db.connection(self.pool) as conn:
            found = await tokens.find_token(conn, token)
        if found is not None:  # unknown tokens are not kept: anyone can send many
            if len(self.found) >= _MAX_CACHED:
                self.found.clear()
            self.found[key] = (now, found)
        return found

    async def is_closed(self) -> bool:
        """Whether a token has ever existed (app.tokens.access_closed)."""
        now = time.monotonic()
        if self.closed is None or now - self.closed[0] >= self.ttl:
            try:
                async with db.connection(self.pool) as conn:
                    self.closed = (now, await tokens.access_closed(conn))
            except db.ERROR_TYPES:
                if self.closed is None:
                    raise
                # out of reach (down, or its pool busy): what it said last holds, so the
                # request meets the outage where it uses the database, as it would open
        return self.closed[1]

    async def exchange_key(self) -> bytes:
        """The key of exchanged OIDC tokens (app.oidc.exchange)."""
        if exchange.signing_key_held is not None:
            return exchange.signing_key_held
        async with db.connection(self.pool) as conn:
            return await exchange.signing_key(conn)


_CREDENTIALS_HELP = (
    "authentication required: Basic auth (user = token name, password = token) or a Bearer token"
)


async def identify(
    env_tokens: Mapping[str, str], cache: TokenCache, authorization: str | None
) -> Principal:
    """Who the Authorization header says is calling; Unauthenticated when nobody may."""
    if not env_tokens and cache.oidc is None and not await cache.is_closed():
        return ANONYMOUS  # an open server: its first run (trusting an issuer closes it)
    if (name := authenticate(env_tokens, authorization)) is not None:
        return bootstrap(name)
    shown = credentials(authorization)
    if shown is None:
        raise Unauthenticated(_CREDENTIALS_HELP)
    user, secret = shown
    if secret.startswith(exchange.PREFIX) and user in (None, BASIC_USER):
        return exchange.read(secret, await cache.exchange_key()).principal
    if cache.oidc is not None and (user == BASIC_USER or (user is None and looks_like_jwt(secret))):
        return (await cache.oidc.verify(secret)).principal
    found = await cache.find(secret)
    if found is None or (user is not None and user != found.principal.name):
        raise Unauthenticated("the token is not known (or not under this name)")
    if found.revoked:
        raise Unauthenticated(f"token {found.principal.name!r} is revoked")
    if found.expires_at is not None and found.expires_at <= datetime.now(UTC):
        raise Unauthenticated(f"token {found.principal.name!r} expired at {found.expires_at}")
    return found.principal


class AuthMiddleware:
    """Pure ASGI (streams pass through untouched); open only until a token exists."""

    def __init__(self, app: ASGIApp, tokens: Mapping[str, str]) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        cache: TokenCache = scope["app"].state.token_cache
        authorization = Headers(scope=scope).get("authorization")
        try:
            if scope["type"] == "websocket" and authorization is None:
                # Browsers cannot set headers on a websocket: /graphql identifies the
                # graphql-transport-ws connection_init payload instead (app.api.app).
                caller = UNVERIFIED
            else:
                caller = await identify(self.tokens, cache, authorization)
        except (Unauthenticated, Forbidden, Unavailable) as exc:
            await self._refuse(exc, scope, receive, send)
            return
        except db.ERROR_TYPES as exc:
            if (error := db.expected(exc)) is None:
                raise
            await self._refuse(error, scope, receive, send)
            return
        state = scope.setdefault("state", {})
        state["principal"] = caller
        state["actor"] = caller.name
        if not caller.claims:
            await self.app(scope, receive, send)
            return
        mark = events.CALLER_CLAIMS.set(dict(caller.claims))
        try:
            await self.app(scope, receive, send)
        finally:
            events.CALLER_CLAIMS.reset(mark)

    @staticmethod
    async def _refuse(error: AppError, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {"WWW-Authenticate": 'Basic realm="infragraph"'} if error.status == 401 else {}
        answer = error_response(error, headers)
        if scope["type"] != "websocket":
            await answer(scope, receive, send)
        elif "websocket.http.response" in scope.get("extensions", {}):
            # the handshake is answered as HTTP would be: its status and reason
            await send(
                {
                    "type": "websocket.http.response.start",
                    "status": answer.status_code,
                    "headers": answer.raw_headers,
                }
            )
            await send({"type": "websocket.http.response.body", "body": answer.body})
        else:
            await send({"type": "websocket.close", "code": _WS_POLICY_VIOLATION})
