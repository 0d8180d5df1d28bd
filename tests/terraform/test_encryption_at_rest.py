"""Real Terraform against a server with INFRAGRAPH_ENCRYPTION_KEY set: apply, plan with
no change, and a remote-state reader work as ever; GET gives back what the export
renders; search cannot confirm a secret; a pg_dump holds none of them in clear."""

import base64
import os
from collections.abc import Iterator

import httpx
import pytest

from tests.helpers.live_server import LiveServer, live_server
from tests.helpers.postgres_tools import pg_dump
from tests.helpers.terraform import PASSWORD, USERNAME, Backend

pytestmark = pytest.mark.slow  # runs real Terraform

DB_PASSWORD = "db-password-planted"
NETWORK, SECRETS = "sealed/network", "sealed/secrets"


@pytest.fixture(scope="module")
def sealed_server(database_url: str) -> Iterator[LiveServer]:
    env = {
        "INFRAGRAPH_API_TOKENS": f"{USERNAME}:{PASSWORD}",
        "INFRAGRAPH_ENCRYPTION_KEY": base64.b64encode(os.urandom(32)).decode(),
    }
    with live_server(database_url, env) as server:
        yield server
        assert not server.server_errors(), server.log()


async def test_terraform_with_the_key_set(new_project, sealed_server, conn, database_url) -> None:
    backend = Backend(sealed_server.url, USERNAME, PASSWORD)
    network = new_project("network", backend.block(NETWORK))
    (await network.run("init")).check()
    (await network.run("apply", "-auto-approve")).check()
    secrets = new_project("secrets", backend.block(SECRETS))
    (await secrets.run("init")).check()
    variables = (
        f"-var=db_password={DB_PASSWORD}",
        f"-var=address={backend.address(NETWORK)}",
        f"-var=username={USERNAME}",
        f"-var=password={PASSWORD}",
    )
    (await secrets.run("apply", "-auto-approve", *variables)).check()
    for project, args in ((network, ()), (secrets, variables)):
        planned = await project.run("plan", "-detailed-exitcode", *args)
        assert planned.returncode == 0, planned.stdout + planned.stderr  # no change
    output = (await secrets.run("output", "-raw", "db_password")).check()
    assert output.stdout == DB_PASSWORD

    async with httpx.AsyncClient(auth=(USERNAME, PASSWORD)) as client:
        for name in (NETWORK, SECRETS):
            served = await client.get(backend.address(name))
            assert served.status_code == 200
            exported = await client.post(
                f"{sealed_server.url}/graphql",
                json={"query": f'mutation {{ exportState(name: "{name}") }}'},
            )
            assert exported.json()["data"]["exportState"] == served.json(), name
        assert DB_PASSWORD.encode() in served.content  # the state holds it, as written
        searched = await client.post(
            f"{sealed_server.url}/graphql",
            json={
                "query": """query($a: JSON!, $b: JSON!, $c: JSON!, $d: JSON!) {
                  db: resources(filter: {attributes: $a}) { totalCount }
                  copy: resources(filter: {attributes: $d}) { totalCount }
                  remote: resources(filter: {attributes: $b}) { totalCount }
                  shape: resources(filter: {attributes: $c}) { totalCount } }""",
                "variables": {
                    "a": {"input": {"value": {"password": DB_PASSWORD}}},
                    "b": {"config": {"value": {"password": PASSWORD}}},
                    "c": {"config": {"value": {"username": USERNAME}}},
                    # terraform_data's output repeats its input, unmarked
                    "d": {"output": {"value": {"password": DB_PASSWORD}}},
                },
            },
        )
    assert searched.json()["data"] == {
        "db": {"totalCount": 0},
        "copy": {"totalCount": 0},
        "remote": {"totalCount": 0},
        "shape": {"totalCount": 1},  # the filter reaches the config: only secrets are out
    }
    dump = pg_dump(database_url)
    for secret in (DB_PASSWORD, PASSWORD):
        assert secret not in dump and secret.encode().hex() not in dump, secret
    assert b'"terraform_version"'.hex() not in dump
