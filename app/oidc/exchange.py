"""The short-lived server token a verified OIDC token is exchanged for (POST
/auth/oidc/token), so a run longer than the ID token's few minutes still writes its
state at the end. It is self-contained: the principal (its name, so a lock taken
with the ID token is the same holder's), role, globs, scopes, the audited claims and
the expiry, under an HMAC keyed from the database's secret key. Nothing is stored, so
it is not revoked one by one: it lives at most the issuer's maxTtlSeconds."""

import base64
import hashlib
import hmac
import time
from dataclasses import dataclass
from typing import Any

import asyncpg

from app import jsonutil
from app.access import Principal, Role
from app.errors import Unauthenticated
from app.iac.state import secret_key
from app.oidc.verify import Verified

PREFIX = "igo_"

signing_key_held: bytes | None = None  # the process's copy


async def signing_key(conn: asyncpg.Connection) -> bytes:
    global signing_key_held
    if signing_key_held is None:
        database_key = await secret_key(conn, None)
        signing_key_held = hmac.new(
            database_key, b"infragraph oidc exchange", hashlib.sha256
        ).digest()
    return signing_key_held


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class Exchanged:
    principal: Principal
    claims: dict[str, str]
    expires_at: float


def mint(verified: Verified, key: bytes, ttl_s: float | None) -> tuple[str, float]:
    """The token and its expiry (epoch seconds): `ttl_s`, at most the issuer's maxTtl."""
    limit = verified.issuer.max_ttl_s
    ttl = limit if ttl_s is None else max(1.0, min(ttl_s, limit))
    expires_at = time.time() + ttl
    p = verified.principal
    payload = _b64(
        jsonutil.dumps(
            {
                "name": p.name,
                "role": p.role.value,
                "states": list(p.state_globs),
                "scopes": list(p.scopes),
                "claims": verified.claims,
                "exp": expires_at,
            }
        )
    )
    mac = _b64(hmac.new(key, payload.encode(), hashlib.sha256).digest())
    return f"{PREFIX}{payload}.{mac}", expires_at


def read(token: str, key: bytes) -> Exchanged:
    """The token's principal; Unauthenticated when it is forged, damaged or expired."""
    payload, _, mac = token.removeprefix(PREFIX).partition(".")
    expected = _b64(hmac.new(key, payload.encode(), hashlib.sha256).digest())
    if not hmac.compare_digest(mac.encode(), expected.encode()):
        raise Unauthenticated("the exchanged OIDC token is not one this server made")
    body: dict[str, Any] = jsonutil.read(_unb64(payload))
    if body["exp"] <= time.time():
        raise Unauthenticated(f"the exchanged OIDC token {body['name']!r} has expired")
    principal = Principal(
        body["name"],
        Role(body["role"]),
        tuple(body["states"]),
        tuple(body["scopes"]),
        claims=tuple(body["claims"].items()),
    )
    return Exchanged(principal, body["claims"], float(body["exp"]))
