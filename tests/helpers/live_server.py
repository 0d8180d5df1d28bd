"""The real server (app.serving: uvicorn with its limits, in a subprocess) for tests over HTTP.

    from tests.helpers.live_server import live_server, server_fixture

    with live_server(database_url, {"INFRAGRAPH_API_TOKENS": "ci:secret"}) as server:
        httpx.get(f"{server.url}/healthz")

    # or, in a test module or conftest: a fixture named `server`, one per module
    server = server_fixture({"INFRAGRAPH_API_TOKENS": None}, scope="module")

The server inherits this process's environment, with DATABASE_URL set to the
given database and `env` applied on top (a value of None removes a variable).
It listens on a free 127.0.0.1 port and logs (access log included) to a file:
`server.log()` reads it. A fixture fails its test at teardown when the server
answered any request with a 5xx or logged a traceback (a 500 is always a bug).
"""

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.helpers.waiting import wait_until_sync

ROOT = Path(__file__).resolve().parent.parent.parent
_PORT_ATTEMPTS = 3
_SERVER_ERROR = re.compile(r'" 5\d\d |Traceback|Exception in ASGI')


@dataclass
class LiveServer:
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def server_errors(self) -> list[str]:
        """Log lines of 5xx responses and tracebacks."""
        return [line for line in self.log().splitlines() if _SERVER_ERROR.search(line)]

    def kill(self) -> None:
        """SIGKILL, as a crash: no shutdown, no cleanup."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


_IN_FLIGHT = re.compile(r"^infragraph_http_requests_in_flight (\S+)$", re.MULTILINE)


async def requests_in_flight(client: httpx.AsyncClient) -> int:
    """Requests the server `client` talks to is answering, this /metrics request included
    (it is counted before authentication, so a request counted earlier got past its own
    authentication first)."""
    found = _IN_FLIGHT.search((await client.get("/metrics")).raise_for_status().text)
    assert found is not None, "no infragraph_http_requests_in_flight in /metrics"
    return int(float(found[1]))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _environment(database_url: str, env: Mapping[str, str | None]) -> dict[str, str]:
    merged: dict[str, str | None] = {
        **os.environ,
        "DATABASE_URL": database_url,
        "PYTHONUNBUFFERED": "1",
        **env,
    }
    return {key: value for key, value in merged.items() if value is not None}


def _ready(server: LiveServer, deadline: float) -> bool:
    """Wait for /healthz to answer 200; False when the process ended first."""

    def outcome() -> str | None:
        if server.process.poll() is not None:
            return "ended"
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{server.url}/healthz", timeout=2).status_code == 200:
                return "ready"
        return None

    try:
        found = wait_until_sync(
            outcome, "/healthz", within=deadline - time.monotonic(), interval=0.05
        )
    except TimeoutError:
        raise TimeoutError(f"the server did not answer /healthz in time:\n{server.log()}") from None
    return found == "ready"


def _start(
    database_url: str, env: Mapping[str, str | None], log_path: Path, timeout: float
) -> LiveServer:
    for _ in range(_PORT_ATTEMPTS):  # the port may be taken between choosing and binding it
        port = free_port()
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "from app.config import Settings; from app.serving import run; "
                    f"run(Settings.from_env(), '127.0.0.1', {port})",
                ],
                cwd=ROOT,
                env=_environment(database_url, env),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        server = LiveServer(f"http://127.0.0.1:{port}", process, log_path)
        if _ready(server, time.monotonic() + timeout):
            return server
        server.stop()
        if "address already in use" not in server.log():
            break
    raise RuntimeError(f"the server did not start:\n{server.log()}")


@contextlib.contextmanager
def live_server(
    database_url: str, env: Mapping[str, str | None] | None = None, *, timeout: float = 30.0
) -> Iterator[LiveServer]:
    """Run the server against `database_url` until the block ends."""
    with tempfile.TemporaryDirectory(prefix="infragraph-server-") as tmp:
        server = _start(database_url, env or {}, Path(tmp) / "server.log", timeout)
        try:
            yield server
        finally:
            server.stop()


def server_fixture(
    env: Mapping[str, str | None] | None = None, *, scope: str = "session"
) -> Callable[..., Iterator[LiveServer]]:
    """A pytest fixture running one server per `scope` against the test session's database
    (the `database_url` fixture of tests/conftest.py)."""

    @pytest.fixture(scope=scope)
    def fixture(database_url: str) -> Iterator[LiveServer]:
        with live_server(database_url, env) as server:
            yield server
            assert not server.server_errors(), server.log()

    return fixture
