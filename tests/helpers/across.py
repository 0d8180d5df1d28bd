"""A producer state and two consumers reading its outputs, posted through the in-process
app (tests/conftest.py's `client`): the API's cross-state tests start from these."""

import httpx

from tests.helpers.links import remote
from tests.helpers.states import resource, state

JSON = {"Content-Type": "application/json"}

# The app's client calls the server http://test: that is its own address.
HERE = "http://test/states/"
SECRET = "s3cr3t-password-1"


def producer(serial: int = 1, secret: str = SECRET) -> bytes:
    return state(
        [resource("aws_vpc", "main", attributes={"id": "vpc-0a1b2c3d4e5f"})],
        serial=serial,
        outputs={
            "vpc_id": {"value": "vpc-0a1b2c3d4e5f", "type": "string"},
            "password": {"value": secret, "type": "string", "sensitive": True},
            "unread": {"value": "nobody-reads-this", "type": "string"},
        },
    )


def consumer(name: str, serial: int = 1, secret: str = SECRET, apps: int = 3) -> bytes:
    read = {"vpc_id": "vpc-0a1b2c3d4e5f", "password": secret}
    return state(
        [
            remote("net", HERE + "team%2Fnet", read),
            resource(
                "aws_instance",
                "app",
                keys=list(range(apps)),
                attributes={"id": f"{name}-instance"},
                depends_on=["data.terraform_remote_state.net"],
            ),
        ],
        serial=serial,
    )


async def post_state(client: httpx.AsyncClient, name: str, body: bytes) -> None:
    response = await client.post(f"/states/{name}", content=body, headers=JSON)
    assert response.status_code == 200, response.text


async def write_linked_states(client: httpx.AsyncClient) -> None:
    await post_state(client, "team/net", producer())
    for name in ("team/a", "team/b"):
        await post_state(client, name, consumer(name))
