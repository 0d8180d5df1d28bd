"""An issuer's signing keys: discovery (/.well-known/openid-configuration), then its
JWKS, cached by `kid` for jwks_cache_s. An unknown `kid` refetches at once, at most one
fetch per min_refetch_s (anyone can send a made-up kid). When the issuer cannot be
reached, the keys already held stay in use; a kid that is not among them is then
Unavailable (503, Retry-After)."""

import asyncio
import time
from typing import Any

import httpx
import jwt

from app.errors import Unauthenticated, Unavailable
from app.oidc.config import Issuer

FETCH_TIMEOUT_S = 5.0


class JwksUnreachable(Unavailable):
    retry_after_s = 30


class IssuerKeys:
    def __init__(self, issuer: Issuer, client: httpx.AsyncClient) -> None:
        self.issuer = issuer
        self.client = client
        self.keys: dict[str, jwt.PyJWK] = {}
        self.fetched_at: float | None = None  # the last fetch tried (monotonic)
        self.fresh_until = 0.0
        self.lock = asyncio.Lock()
        self.failing: str | None = None  # why the last fetch failed; None: it did not

    async def key(self, kid: str | None) -> jwt.PyJWK:
        now = time.monotonic()
        if now >= self.fresh_until or (kid not in self.keys and self._may_refetch(now)):
            async with self.lock:
                now = time.monotonic()
                if now >= self.fresh_until or (kid not in self.keys and self._may_refetch(now)):
                    await self._refresh(now)
        found = self.keys.get(kid or "")
        if found is None and self.failing is not None:
            raise JwksUnreachable(f"OIDC: key {kid!r} is not held, and {self.failing}")
        if found is None:
            raise Unauthenticated(
                f"OIDC: key {kid!r} is not among {self.issuer.issuer}'s keys (refetched)"
            )
        return found

    def _may_refetch(self, now: float) -> bool:
        return self.fetched_at is None or now - self.fetched_at >= self.issuer.min_refetch_s

    async def _refresh(self, now: float) -> None:
        self.fetched_at = now
        try:
            self.keys = await self._fetch()
            self.fresh_until = now + self.issuer.jwks_cache_s
            self.failing = None
        except (httpx.HTTPError, ValueError, KeyError, TypeError, jwt.PyJWTError) as exc:
            self.failing = (
                f"the keys of {self.issuer.issuer} cannot be fetched ({exc}); retry later"
            )
            if not self.keys:
                raise JwksUnreachable(f"OIDC: {self.failing}") from None
            # the keys held stay in use; try again after min_refetch_s
            self.fresh_until = now + self.issuer.min_refetch_s

    async def _fetch(self) -> dict[str, jwt.PyJWK]:
        base = self.issuer.issuer
        discovery = await self._get_json(f"{base}/.well-known/openid-configuration")
        if str(discovery.get("issuer", "")).rstrip("/") != base:
            raise ValueError(f"discovery names issuer {discovery.get('issuer')!r}")
        jwks = await self._get_json(str(discovery["jwks_uri"]))
        keys: dict[str, jwt.PyJWK] = {}
        for raw in jwks["keys"]:
            if isinstance(raw, dict) and raw.get("kid") and raw.get("use", "sig") == "sig":
                try:
                    keys[str(raw["kid"])] = jwt.PyJWK(raw)
                except jwt.PyJWTError:
                    continue  # a key type this server does not use
        return keys

    async def _get_json(self, url: str) -> dict[str, Any]:
        answer = await self.client.get(url, timeout=FETCH_TIMEOUT_S)
        answer.raise_for_status()
        found = answer.json()
        if not isinstance(found, dict):
            raise ValueError(f"{url} did not answer a JSON object")
        return found
