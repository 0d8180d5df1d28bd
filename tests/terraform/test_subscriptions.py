"""Live updates across servers: `terraform apply` through server A shows, as
subscription messages, on server B of the same database (LISTEN/NOTIFY)."""

from collections.abc import Iterator

import pytest

from tests.helpers.graphql_ws import events, subscribe
from tests.helpers.live_server import LiveServer, live_server
from tests.helpers.terraform import PASSWORD, USERNAME, Backend

STATE = "team/live"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server_b(database_url: str, server: LiveServer) -> Iterator[LiveServer]:
    """A second server on the terraform tests' database (`server` is A)."""
    with live_server(database_url, {"INFRAGRAPH_API_TOKENS": f"{USERNAME}:{PASSWORD}"}) as b:
        yield b
        assert not b.server_errors(), b.log()


async def test_an_apply_on_server_a_reaches_a_subscriber_of_server_b(
    new_project, backend: Backend, server: LiveServer, server_b: LiveServer
) -> None:
    assert server_b.url != server.url
    terraform = new_project("chain", backend.block(STATE))
    (await terraform.run("init")).check()
    bearer = {"Authorization": f"Bearer {PASSWORD}"}
    async with subscribe(server_b.url, {"state": STATE}, token=PASSWORD, headers=bearer) as ws:
        (await terraform.run("apply", "-auto-approve")).check()
        lock, write, unlock = await events(ws, 3)
    assert [lock["action"], write["action"], unlock["action"]] == ["lock", "write", "unlock"]
    assert {e["stateName"] for e in (lock, write, unlock)} == {STATE}
    assert {e["actor"] for e in (lock, write, unlock)} == {USERNAME}
    assert lock["detail"]["id"] == unlock["detail"]["id"]  # Terraform's lock ID
    assert write["serial"] == 1 and write["detail"]["resources"] == 3
    assert f'"LOCK /states/{STATE}/lock HTTP/1.1" 200' in server.log()
    assert "/states/" not in server_b.log()  # B saw no write: it heard of them
