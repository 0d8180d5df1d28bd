"""The `infragraph` command run as a CI job runs it, against a live server whose
bootstrap token is TOKEN."""

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.helpers.live_server import LiveServer, server_fixture

TOKEN = "s3cret-ci-token"


class Cli:
    """Runs `infragraph` as a CI job would: a URL and a token, no database settings."""

    def __init__(self, server: LiveServer, home: Path, token: str | None = TOKEN) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "PG"))}
        env |= {"INFRAGRAPH_URL": server.url, "INFRAGRAPH_HOME": str(home)}
        env.pop("INFRAGRAPH_TOKEN", None)
        if token is not None:
            env["INFRAGRAPH_TOKEN"] = token
        self.env = env

    def __call__(self, *args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
        done = subprocess.run(
            [Path(sys.executable).parent / "infragraph", *args],
            env=self.env,
            input=stdin,
            capture_output=True,
            timeout=120,
        )
        return done.returncode, done.stdout.decode(), done.stderr.decode()


def cli_server() -> Callable[..., Iterator[LiveServer]]:
    """A module's `server` fixture: a live server on the session's database whose
    bootstrap token `ci` is TOKEN."""
    return server_fixture({"INFRAGRAPH_API_TOKENS": f"ci:{TOKEN}"}, scope="module")
