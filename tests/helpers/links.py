"""States that read each other's outputs through terraform_remote_state: a network
state and an app state reading it, as the graph's and the API's link tests write them."""

from typing import Any

from app.tfstate.remote import Server
from tests.helpers.states import BUILTIN, resource, state

SERVERS = [Server.parse("https://infragraph.example/tf")]
VPC_ID = "vpc-0a1b2c3d4e5f60718"


def remote(name: str, address: str, outputs: dict[str, Any]) -> dict[str, Any]:
    """A terraform_remote_state data source as Terraform stores it (dynamic attributes as
    {"value", "type"})."""
    return resource(
        "terraform_remote_state",
        name,
        mode="data",
        provider=BUILTIN,
        attributes={
            "backend": "http",
            "config": {"value": {"address": address}, "type": ["object", {"address": "string"}]},
            "defaults": None,
            "outputs": {"value": outputs, "type": ["object", {k: "string" for k in outputs}]},
            "workspace": None,
        },
    )


def here(name: str) -> str:
    return f"https://InfraGraph.example:443/tf/states/{name.replace('/', '%2F')}"


def network(serial: int = 1, vpc_id: str = VPC_ID, **extra: Any) -> bytes:
    outputs = {
        "vpc_id": {"value": vpc_id, "type": "string"},
        "region": {"value": "us-east-1", "type": "string"},
        "flag": {"value": True, "type": "bool"},
        "count": {"value": "1", "type": "string"},
        **extra,
    }
    return state(
        [
            resource(
                "aws_vpc", "main", attributes={"id": vpc_id, "region": "us-east-1", "on": True}
            ),
            resource(
                "aws_subnet",
                "a",
                attributes={"id": "subnet-0a1b2c3d4e", "vpc_id": vpc_id, "count": "1"},
                depends_on=["aws_vpc.main"],
            ),
        ],
        serial=serial,
        outputs=outputs,
    )


def app(serial: int = 1, read: dict[str, Any] | None = None, producer: str = "team/net") -> bytes:
    values = {"vpc_id": VPC_ID, "region": "us-east-1"} if read is None else read
    return state(
        [
            remote("net", here(producer), values),
            remote("elsewhere", "https://other.example/tf/states/team/net", values),
            resource(
                "aws_instance",
                "web",
                attributes={"id": "i-0123456789"},
                depends_on=["data.terraform_remote_state.net"],
            ),
        ],
        serial=serial,
    )


def produced(name: str, version: int = 1) -> dict[str, str]:
    """The outputs state `name` produces (`id` changes with `version`)."""
    return {"id": f"{name}#{version}", "endpoint": f"https://{name.replace('/', '-')}.internal"}


def estate(states: int = 50) -> dict[str, list[str]]:
    """`states` states (20 at least) and the states each reads, producers first: five
    core states reading none, fifteen platform states reading two core states each, the
    rest apps reading a platform state and a core state (three link depths)."""
    core = [f"core/{i}" for i in range(5)]
    platform = [f"platform/{i:02}" for i in range(15)]
    apps = [f"apps/{i:02}" for i in range(states - len(core) - len(platform))]
    reads: dict[str, list[str]] = {name: [] for name in core}
    reads |= {name: [core[i % 5], core[(i + 2) % 5]] for i, name in enumerate(platform)}
    reads |= {name: [platform[i % 15], core[(i + 1) % 5]] for i, name in enumerate(apps)}
    return reads


def linked(name: str, reads: list[str], *, version: int = 1) -> bytes:
    """State `name` at serial `version`: its outputs (produced) and a data source reading
    each of `reads` (their outputs as at version 1), data.terraform_remote_state.<slug>."""
    return state(
        [resource("aws_ssm_parameter", "marker", attributes={"id": name})]
        + [remote(p.replace("/", "_"), here(p), produced(p)) for p in reads],
        serial=version,
        outputs={k: {"value": v, "type": "string"} for k, v in produced(name, version).items()},
    )
