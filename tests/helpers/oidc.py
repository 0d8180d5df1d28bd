"""Requests as a CI job signed in with OIDC makes them: Basic auth carrying the ID
token, and a small state written with it."""

import base64
import uuid

import httpx

from tests.live_server import LiveServer

STATE = (
    b'{"version": 4, "terraform_version": "1.9.0", "serial": %d, "lineage": "%s",'
    b' "outputs": {}, "resources": []}'
)


def basic(jwt: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"oidc:{jwt}".encode()).decode()}


def post_state(
    server: LiveServer,
    name: str,
    headers: dict[str, str],
    serial: int = 1,
    lock_id: str | None = None,
) -> httpx.Response:
    lineage = str(uuid.uuid5(uuid.NAMESPACE_URL, name))
    params = {"ID": lock_id} if lock_id else {}
    return httpx.post(
        f"{server.url}/states/{name}",
        content=STATE % (serial, lineage.encode()),
        headers={**headers, "Content-Type": "application/json"},
        params=params,
    )
