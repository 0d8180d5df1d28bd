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


def _bytes(text: str) -> bytes:
    """A base64url segment (no padding), decoded."""
    if not _SEGMENT.fullmatch(text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _segment(text: str) -> dict[str, Any]:
    """A JWT's header or payload, unverified: what says which issuer and key to use."""
    found = jsonutil.read(_bytes(text))
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
            header_text, payload_text, signature_text = token.split(".")
            header, unverified = _segment(header_text), _segment(payload_text)
            signature = _bytes(signature_text)
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
        _check_signature(f"{header_text}.{payload_text}".encode(), signature, alg, key)
        claims = _checked(unverified, issuer)
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


def _check_signature(signed: bytes, signature: bytes, alg: str, key: jwt.PyJWK) -> None:
    """The signature checked with the key, by the key's own algorithm (a token does not
    choose how its key is used). PyJWT's decode is not used: it checks each character of
    the token in Python, several times the signature's cost; the segments were checked
    as base64url already."""
    if alg != key.algorithm_name:
        raise Unauthenticated(
            f"OIDC: bad signature (the key is for {key.algorithm_name}, the token says {alg})"
        )
    try:
        valid = key.Algorithm.verify(signed, key.key, signature)
    except (jwt.PyJWTError, ValueError, TypeError):
        valid = False
    if not valid:
        raise Unauthenticated("OIDC: bad signature (the signature does not verify)")


REQUIRED = ("exp", "iat", "iss", "aud", "sub")


def _number(claims: dict[str, Any], name: str) -> float:
    value = claims[name]
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise Unauthenticated(f"OIDC: invalid token ({name} is not a number)")
    return float(value)


def _checked(claims: dict[str, Any], issuer: Issuer) -> dict[str, Any]:
    """The verified token's claims, once its times, issuer, audience and subject hold."""
    if missing := [c for c in REQUIRED if c not in claims]:
        raise Unauthenticated(f"OIDC: a required claim is missing ({', '.join(missing)})")
    now, skew = time.time(), issuer.clock_skew_s
    if _number(claims, "exp") + skew <= now:
        raise Unauthenticated("OIDC: the token has expired")
    if _number(claims, "iat") - skew > now or (
        "nbf" in claims and _number(claims, "nbf") - skew > now
    ):
        raise Unauthenticated("OIDC: the token is not yet valid")
    if claims["iss"] != issuer.issuer:
        raise Unauthenticated(f"OIDC: wrong issuer ({claims['iss']!r})")
    audience = claims["aud"]
    audiences = [audience] if isinstance(audience, str) else audience
    if not isinstance(audiences, list) or issuer.audience not in audiences:
        raise Unauthenticated(f"OIDC: wrong audience ({audience!r}, not {issuer.audience!r})")
    if not isinstance(claims["sub"], str) or not claims["sub"]:
        raise Unauthenticated("OIDC: the token has no subject")
    return claims
