"""POST /auth/oidc/token: a verified OIDC ID token (in the body as {"token": ...}, or
as the Authorization header: Bearer, or Basic with user `oidc`) exchanged for a
short-lived server token with its rule's role and globs (app.oidc.exchange). The
path is open to the auth middleware: this route verifies the ID token itself."""

from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from app import jsonutil
from app.auth import TokenCache, credentials
from app.errors import BadInput, NotFound, Unauthenticated
from app.http import json_response
from app.oidc import exchange

PATH = "/auth/oidc/token"
_MAX_BODY = 256 * 1024  # an oversized token is refused by the verifier, with its reason


async def _exchange(request: Request) -> Response:
    cache: TokenCache = request.app.state.token_cache
    if cache.oidc is None:
        raise NotFound("no OIDC issuer is trusted (INFRAGRAPH_OIDC_CONFIG is unset)")
    body = await request.body()
    if len(body) > _MAX_BODY:
        raise BadInput(f"the body is over {_MAX_BODY} bytes")
    asked = jsonutil.read(body) if body.strip() else {}
    if not isinstance(asked, dict):
        raise BadInput('give {"token": "<OIDC ID token>", "ttlSeconds": <optional>}')
    token = asked.get("token")
    if token is None and (shown := credentials(request.headers.get("authorization"))):
        token = shown[1]
    if not isinstance(token, str) or not token:
        raise Unauthenticated("give the OIDC ID token as the body's `token` or as Bearer")
    ttl = asked.get("ttlSeconds")
    if ttl is not None and (not isinstance(ttl, int | float) or isinstance(ttl, bool)):
        raise BadInput("ttlSeconds is a number")
    verified = await cache.oidc.verify(token)
    minted, expires_at = exchange.mint(verified, await cache.exchange_key(), ttl)
    p = verified.principal
    return json_response(
        {
            "token": minted,
            "expiresAt": datetime.fromtimestamp(expires_at, UTC).isoformat(),
            "principal": p.name,
            "role": p.role.value,
            "states": list(p.state_globs),
            "scopes": list(p.scopes),
            "claims": verified.claims,
        }
    )


def routes() -> list[Route]:
    return [Route(PATH, _exchange, methods=["POST"])]
