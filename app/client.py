"""A client of the server's own API (GraphQL and /states), for the CLI.

The server is `INFRAGRAPH_URL` (default http://127.0.0.1:8080), the token
`INFRAGRAPH_TOKEN` (sent as `Authorization: Bearer`). It never opens the database:
a CI job needs a URL and a token, not database credentials.
"""

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from app import jsonutil
from app.iac.model import LineError

DEFAULT_URL = "http://127.0.0.1:8080"


@dataclass
class Refused(Exception):
    """The server said no (or could not be reached): a message, one line per problem."""

    lines: list[str]

    def __str__(self) -> str:
        return "\n".join(self.lines)


def _reason(message: str, detail: Any) -> list[str]:
    """The message, and an invalid document's errors one per line."""
    errors = detail.get("errors") if isinstance(detail, dict) else None
    if not errors:
        return [message]
    return [message.splitlines()[0], *(str(LineError(**e)) for e in errors)]


def _body(response: httpx.Response) -> Any:
    try:
        return jsonutil.loads(response.content)
    except ValueError:
        return None


class Client:
    def __init__(self, url: str, token: str | None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        # no read timeout: a big import or apply takes as long as it takes
        timeout = httpx.Timeout(10.0, read=None, write=None)
        self.url = url.rstrip("/")
        self.http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    @classmethod
    def from_env(cls) -> "Client":
        url = os.environ.get("INFRAGRAPH_URL") or DEFAULT_URL
        return cls(url, os.environ.get("INFRAGRAPH_TOKEN") or None)

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise Refused([f"cannot reach the server at {self.url}: {exc}"]) from None

    def graphql(self, query: str, variables: Mapping[str, Any]) -> dict[str, Any]:
        """The data of an operation; Refused with the first error's message and detail."""
        # ASCII with escapes: the server reads the body with app.jsonutil.read (the CLI has
        # refused a document of invalid UTF-8 before it gets here)
        content = json.dumps({"query": query, "variables": variables}).encode()
        headers = {"Content-Type": "application/json"}
        response = self._send("POST", "/graphql", content=content, headers=headers)
        body = _body(response)
        if body is None or not body.get("errors"):
            body = self._json(response)
        if body.get("errors"):
            error = body["errors"][0]
            detail = (error.get("extensions") or {}).get("detail")
            raise Refused(_reason(error["message"], detail))
        data: dict[str, Any] = body["data"]
        return data

    def exchange_oidc(self, token: str, ttl_s: float | None) -> dict[str, Any]:
        """A server token for an OIDC ID token (POST /auth/oidc/token)."""
        asked: dict[str, Any] = {"token": token}
        if ttl_s is not None:
            asked["ttlSeconds"] = ttl_s
        response = self._send("POST", "/auth/oidc/token", json=asked)
        if response.status_code == 401:  # the ID token's refusal, not a missing token
            body = _body(response)
            raise Refused(_reason(body["error"], None) if isinstance(body, dict) else [])
        return self._json(response)

    def state(
        self,
        method: str,
        name: str,
        content: bytes | Iterable[bytes] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """A call of the HTTP backend on state `name` (POST, LOCK, UNLOCK); its JSON."""
        path = f"/states/{quote(name, safe='/')}"
        # the server takes state-changing bodies as JSON only (a form post cannot be)
        headers = {"Content-Type": "application/json", **(headers or {})}
        response = self._send(method, path, content=content, headers=headers)
        return self._json(response)

    def _json(self, response: httpx.Response) -> dict[str, Any]:
        body = _body(response)
        if response.status_code == 401:
            raise Refused(["the server wants a token: set INFRAGRAPH_TOKEN"])
        if response.status_code >= 400 or not isinstance(body, dict):
            if isinstance(body, dict) and "error" in body:
                lines = _reason(body["error"], body.get("detail"))
                if "Who" in body:  # a held lock: the holder's LockInfo
                    lines.append(f"held by {body.get('Who')} (lock ID {body.get('ID')})")
                raise Refused(lines)
            raise Refused([f"the server answered {response.status_code}: {response.text[:200]}"])
        return body
