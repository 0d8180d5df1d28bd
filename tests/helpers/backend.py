"""Requests as Terraform makes them: states, LockInfo, Content-MD5, LOCK and UNLOCK; and
the tokens and size limit of the live server the backend tests run (tests/backend/conftest.py)."""

import base64
import hashlib
import json
import uuid
from typing import Any

import asyncpg
import httpx

from tests.helpers.live_server import LiveServer
from tests.helpers.states import BUILTIN, resource, state

TOKENS = {"tf": "tf-secret", "ci": "ci-secret"}
MAX_STATE_BYTES = 12 * 1024 * 1024  # above the 8 MiB GET slices, so big states stream


def http_client(server: LiveServer, auth: tuple[str, str] | None) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=server.url,
        auth=auth,
        headers={"Content-Type": "application/json"},  # what Terraform sends
        timeout=120,
        limits=httpx.Limits(max_connections=100, max_keepalive_connections=100),
    )


def content_md5(body: bytes) -> dict[str, str]:
    return {"Content-MD5": base64.b64encode(hashlib.md5(body).digest()).decode()}


def tf_state(serial: int = 1, lineage: str = "lineage-1", value: str = "a") -> bytes:
    """A small state as Terraform writes it: one terraform_data and an output."""
    return state(
        [resource("terraform_data", "x", attributes={"input": value}, provider=BUILTIN)],
        serial=serial,
        lineage=lineage,
        outputs={"value": {"value": value, "type": "string"}},
    )


def lock_info(lock_id: str | None = None, who: str = "alice@laptop") -> dict[str, Any]:
    """Terraform's LockInfo for an apply."""
    return {
        "ID": lock_id or str(uuid.uuid4()),
        "Operation": "OperationTypeApply",
        "Info": "",
        "Who": who,
        "Version": "1.15.5",
        "Created": "2026-01-01T12:00:00.000000Z",
        "Path": "",
    }


async def lock(client: httpx.AsyncClient, info: dict[str, Any], url: str) -> httpx.Response:
    body = json.dumps(info).encode()
    return await client.request("LOCK", url, content=body, headers=content_md5(body))


async def unlock(client: httpx.AsyncClient, body: bytes, url: str) -> httpx.Response:
    return await client.request("UNLOCK", url, content=body, headers=content_md5(body))


async def versions(conn: asyncpg.Connection, name: str) -> list[int]:
    rows = await conn.fetch(
        """SELECT v.serial FROM state_versions v JOIN states s ON s.id = v.state_id
           WHERE s.name = $1 ORDER BY v.serial""",
        name,
    )
    return [r["serial"] for r in rows]


async def events(conn: asyncpg.Connection, name: str) -> list[asyncpg.Record]:
    return await conn.fetch(
        """SELECT action, actor, serial, detail FROM events
           WHERE state_name = $1 ORDER BY created_at""",
        name,
    )


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The JSON error body of `response`, checked to have this status and code."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["code"] == code and body["error"]
    return body
