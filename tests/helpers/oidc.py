"""Requests the OIDC tests make: Basic `oidc:<jwt>` and Bearer headers, a state POST,
and the CLI run as a CI job runs it; and the environment of a server trusting issuers,
with its bootstrap admin (tests/oidc/conftest.py's `oidc_server`)."""

import base64
import os
import subprocess
import sys
import uuid
from pathlib import Path

import httpx

from tests.helpers.live_server import LiveServer

STATE = (
    b'{"version": 4, "terraform_version": "1.9.0", "serial": %d, "lineage": "%s",'
    b' "outputs": {}, "resources": []}'
)

ADMIN = ("boot", "boot-secret")


def oidc_server_env(path: Path, config: str) -> dict[str, str | None]:
    path.write_text(config)
    return {"INFRAGRAPH_API_TOKENS": ":".join(ADMIN), "INFRAGRAPH_OIDC_CONFIG": str(path)}


def basic(jwt: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"oidc:{jwt}".encode()).decode()}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


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


def run_cli(server: LiveServer, home: Path, token: str | None, *args: str) -> tuple[int, str, str]:
    """`infragraph ARGS` as a CI job runs it: a URL and maybe a token, no database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "PG"))}
    env |= {"INFRAGRAPH_URL": server.url, "INFRAGRAPH_HOME": str(home)}
    env.pop("INFRAGRAPH_TOKEN", None)
    if token is not None:
        env["INFRAGRAPH_TOKEN"] = token
    done = subprocess.run(
        [Path(sys.executable).parent / "infragraph", *args],
        env=env,
        capture_output=True,
        timeout=120,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()
