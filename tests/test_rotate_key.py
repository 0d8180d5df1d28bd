"""`infragraph rotate-key` and the key settings, as an operator runs them: a server with
one key, the rotation to the next while a server with both keys serves, then a server
with the new key only; a malformed key refuses to start; no key is said at start-up."""

import base64
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.helpers.live_server import live_server
from tests.helpers.postgres_tools import pg_dump
from tests.helpers.secrets import PLANTED, leaks, secret_state

pytestmark = pytest.mark.slow  # starts servers of its own

CLI = Path(sys.executable).parent / "infragraph"


def _key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


def _infragraph(database_url: str, env: dict[str, str], *args: str) -> tuple[int, str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("INFRAGRAPH_")}
    done = subprocess.run(
        [CLI, *args],
        env={**environment, "DATABASE_URL": database_url, **env},
        capture_output=True,
        timeout=120,
    )
    return done.returncode, done.stderr.decode()


def _get(url: str) -> httpx.Response:
    response = httpx.get(f"{url}/states/s")
    assert response.status_code == 200, response.text
    return response


def test_rotate_from_clear_to_a_key_then_to_the_next(conn, database_url: str) -> None:
    first, second = _key(), _key()
    bodies = [secret_state(1), secret_state(2, password="hunter2-planted!")]
    with live_server(database_url) as server:
        for body in bodies:
            assert (
                httpx.post(
                    f"{server.url}/states/s",
                    content=body,
                    headers={"Content-Type": "application/json"},
                ).status_code
                == 200
            )
        assert "INFRAGRAPH_ENCRYPTION_KEY is unset: state is stored in clear" in server.log()
    assert set(leaks(pg_dump(database_url), bodies)) >= set(PLANTED)

    code, said = _infragraph(database_url, {"INFRAGRAPH_ENCRYPTION_KEY": first}, "rotate-key")
    assert code == 0, said
    assert "s: 2 chunks, 2 md5, 4 resources, 1 outputs" in said and "re-sealed 1 state" in said
    assert leaks(pg_dump(database_url), bodies) == []

    both = {"INFRAGRAPH_ENCRYPTION_KEY": second, "INFRAGRAPH_ENCRYPTION_KEY_OLD": first}
    with live_server(database_url, both) as server:
        before = _get(server.url)
        code, said = _infragraph(database_url, both, "rotate-key")
        assert code == 0, said
        after = _get(server.url)  # served throughout, the same bytes
        assert before.content == after.content == bodies[-1]
        assert "stored in clear" not in server.log() and not server.server_errors()
    code, said = _infragraph(database_url, both, "rotate-key")  # nothing left to do
    assert code == 0 and "re-sealed 0 state(s)" in said

    with live_server(database_url, {"INFRAGRAPH_ENCRYPTION_KEY": second}) as server:
        served = _get(server.url)
        assert served.content == bodies[-1]
        md5 = base64.b64encode(hashlib.md5(bodies[-1]).digest()).decode()
        assert served.headers["content-md5"] == md5
        for serial, body in enumerate(bodies, start=1):
            exported = httpx.post(
                f"{server.url}/graphql",
                json={"query": f'mutation {{ exportState(name: "s", serial: {serial}) }}'},
            )
            assert (
                exported.json()["data"]["exportState"] == httpx.Response(200, content=body).json()
            )
        assert not server.server_errors()


def test_a_malformed_key_refuses_to_start(database_url: str) -> None:
    for command in ("serve", "rotate-key", "migrate"):
        code, said = _infragraph(database_url, {"INFRAGRAPH_ENCRYPTION_KEY": "not-a-key"}, command)
        assert code == 1, said
        assert "INFRAGRAPH_ENCRYPTION_KEY must be 32 random bytes in base64" in said
        assert "Traceback" not in said
