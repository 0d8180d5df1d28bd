"""`terraform_remote_state` next to an OpenTofu-encrypted state: the plain producer is
read as ever; the encrypted one is served as written, for its own key holders only."""

import httpx
import pytest

from tests.helpers.backend import content_md5
from tests.helpers.states import state
from tests.helpers.terraform import PASSWORD, USERNAME, Backend
from tests.helpers.tofu_encryption import tofu

pytestmark = pytest.mark.slow  # runs real Terraform

PLAIN = "tofu/prod/network"
ENCRYPTED = "tofu/prod/secrets"


def _producer(serial: int, vpc_name: str) -> bytes:
    """A producer's state holding the outputs configs/consumer reads."""
    return state(
        [],
        serial=serial,
        outputs={
            "vpc_name": {"value": vpc_name, "type": "string"},
            "gateways": {
                "value": {"a": "gw-a", "b": "gw-b"},
                "type": ["object", {"a": "string", "b": "string"}],
            },
        },
    )


async def test_remote_state_reads_a_plain_producer_beside_an_encrypted_one(
    new_project, backend: Backend, server
) -> None:
    sealed = tofu().encrypt(_producer(1, "vpc-secret"))
    async with httpx.AsyncClient(
        auth=(USERNAME, PASSWORD), headers={"Content-Type": "application/json"}
    ) as client:
        for name, body in ((PLAIN, _producer(1, "vpc-plain")), (ENCRYPTED, sealed)):
            response = await client.post(backend.address(name), content=body)
            assert response.status_code == 200, response.text

    async def read(name: str):
        reader = new_project("consumer")
        (await reader.run("init")).check()
        applied = await reader.run(
            "apply",
            "-auto-approve",
            f"-var=address={backend.address(name)}",
            f"-var=username={USERNAME}",
            f"-var=password={PASSWORD}",
        )
        return reader, applied

    reader, applied = await read(PLAIN)
    applied.check()
    outputs = (await reader.run("output", "-raw", "vpc_name")).check()
    assert outputs.stdout == "vpc-plain"

    # Terraform (no key, no OpenTofu) cannot read the encrypted one: its own error, after
    # the server served the bytes as written
    _, refused = await read(ENCRYPTED)
    assert refused.returncode != 0
    assert 'does not have a "version" attribute' in " ".join(refused.stderr.split())
    assert not server.server_errors()
    async with httpx.AsyncClient(
        auth=(USERNAME, PASSWORD), headers={"Content-Type": "application/json"}
    ) as client:
        served = await client.get(backend.address(ENCRYPTED))
    assert (
        served.content == sealed
        and served.headers["content-md5"] == content_md5(sealed)["Content-MD5"]
    )
    assert tofu().decrypt(served.content) == _producer(1, "vpc-secret")
