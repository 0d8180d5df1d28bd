"""Verifying an OIDC ID token (a JWT) from a trusted issuer, and the principal its
first matching rule makes of it. Every refusal says why: 401 for a token that is not a
valid one of a trusted issuer, 403 for a valid one no rule admits, 503 (Retry-After)
when the issuer's keys cannot be fetched and none is held."""

import base64
import binascii
import hashlib
import re
import time
from dataclasses import dataclass
from typing import Any

import httpx
import jwt

from app import jsonutil
from app.access import Principal
from app.errors import Forbidden, Unauthenticated
from app.oidc.config import Issuer, claim_text
from app.oidc.keys import IssuerKeys

MAX_JWT_BYTES = 8192  # CI ID tokens are ~1-2 KB; larger ones are not parsed
BASIC_USER = "oidc"  # Basic auth with this user carries a JWT as its password
PRINCIPAL_PREFIX = "oidc:"  # no database token's name holds a ':'

# What the audit trail keeps of a verified token: who issued it, about whom, and the
# CI job (GitHub Actions and GitLab CI names).
AUDITED = (
    "sub",
    "repository",
    "repository_id",
    "project_path",
    "project_id",
    "namespace_id",
    "ref",
    "ref_type",
    "workflow",
    "workflow_ref",
    "job_workflow_ref",
    "run_id",
    "pipeline_id",
    "job_id",
    "environment",
)


@dataclass(frozen=True)
class Verified:
    principal: Principal
    issuer: Issuer
    claims: dict[str, str]  # the audited ones, as text
    expires_at: float


def looks_like_jwt(secret: str) -> bool:
    return secret.startswith("eyJ") and secret.count(".") == 2


_SEGMENT = re.compile(r"[A-Za-z0-9_-]*")
_MAX_VERIFIED = 10_000  # tokens; past it the cache starts over


def _segment(text: str) -> dict[str, Any]:
    """A JWT's header or payload, unverified: what says which issuer and key to use."""
    if not _SEGMENT.fullmatch(text):
        raise ValueError("not base64url")
    found = jsonutil.read(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    if not isinstance(found, dict):
        raise ValueError("not a JSON object")
    return found


class Verifier:
    """Verified tokens are kept by their SHA-256 until they expire: a CI job sends the
    same one with each of its requests, and only the first pays for the signature."""

    def __init__(self, issuers: tuple[Issuer, ...]) -> None:
        self.client = httpx.AsyncClient()
        self.keys = {i.issuer: IssuerKeys(i, self.client) for i in issuers}
        self.verified: dict[bytes, Verified] = {}

    async def close(self) -> None:
        await self.client.aclose()

    async def verify(self, token: str) -> Verified:
        if len(token) > MAX_JWT_BYTES:
            raise Unauthenticated(f"OIDC: the token is over {MAX_JWT_BYTES} bytes")
        digest = hashlib.sha256(token.encode()).digest()
        known = self.verified.get(digest)
        if known is not None and time.time() < known.expires_at + known.issuer.clock_skew_s:
            return known
        found = await self._verify(token)
        if len(self.verified) >= _MAX_VERIFIED:
            self.verified.clear()
        self.verified[digest] = found
        return found

    async def _verify(self, token: str) -> Verified:
        try:
            header_text, payload_text, _ = token.split(".")
            header, unverified = _segment(header_text), _segment(payload_text)
        except (ValueError, binascii.Error) as exc:
            raise Unauthenticated(f"OIDC: malformed token ({exc})") from None
        alg = header.get("alg")
        iss = unverified.get("iss")
        keys = self.keys.get(iss.rstrip("/")) if isinstance(iss, str) else None
        if keys is None:
            raise Unauthenticated(f"OIDC: issuer {iss!r} is not trusted")
        issuer = keys.issuer
        if alg not in issuer.algorithms:
            raise Unauthenticated(
                f"OIDC: algorithm {alg!r} refused (allowed: {', '.join(issuer.algorithms)})"
            )
        kid = header.get("kid")
        key = await keys.key(kid if isinstance(kid, str) else None)
        claims = _decode(token, key, issuer)
        rule = issuer.first_rule(claims)
        audited = {"iss": issuer.issuer} | {
            k: claim_text(claims[k]) for k in AUDITED if k in claims
        }
        name = f"{PRINCIPAL_PREFIX}{issuer.name}:{claims['sub']}"
        if rule is None:
            raise Forbidden(
                f"OIDC: no rule of issuer {issuer.name!r} admits {name!r}"
                f" ({', '.join(f'{k}={v}' for k, v in audited.items() if k != 'iss')})",
                {"token": name, **audited},
            )
        principal = Principal(
            name, rule.role, rule.states, rule.scopes, claims=tuple(audited.items())
        )
        return Verified(principal, issuer, audited, float(claims["exp"]))


_REASONS: tuple[tuple[type[jwt.PyJWTError], str], ...] = (
    (jwt.ExpiredSignatureError, "the token has expired"),
    (jwt.ImmatureSignatureError, "the token is not yet valid"),
    (jwt.InvalidAudienceError, "wrong audience"),
    (jwt.InvalidIssuerError, "wrong issuer"),
    (jwt.InvalidSignatureError, "bad signature"),
    (jwt.MissingRequiredClaimError, "a required claim is missing"),
)


def _decode(token: str, key: jwt.PyJWK, issuer: Issuer) -> dict[str, Any]:
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=list(issuer.algorithms),
            audience=issuer.audience,
            issuer=issuer.issuer,
            leeway=issuer.clock_skew_s,
            options={"require": ["exp", "iat", "iss", "aud", "sub"]},
        )
    except jwt.PyJWTError as exc:
        reason = next((r for kind, r in _REASONS if isinstance(exc, kind)), "invalid token")
        raise Unauthenticated(f"OIDC: {reason} ({exc})") from None
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise Unauthenticated("OIDC: the token has no subject")
    if float(claims["exp"]) + issuer.clock_skew_s <= time.time():
        raise Unauthenticated("OIDC: the token has expired")
    return claims
