"""Build real Terraform v4 state documents for tests."""

import copy
import json
from typing import Any

from app.graph.edges import WalkLimits

AWS = 'provider["registry.terraform.io/hashicorp/aws"]'
BUILTIN = 'provider["terraform.io/builtin/terraform"]'
# `sensitive_attributes` marking the `password` attribute
PASSWORD = [[{"type": "get_attr", "value": "password"}]]


def resource(
    rtype: str,
    name: str,
    *,
    attributes: dict[str, Any] | None = None,
    depends_on: list[str] | tuple[str, ...] = (),
    module: str | None = None,
    mode: str = "managed",
    provider: str = AWS,
    keys: list[int] | list[str] | None = None,
    sensitive: list[list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """One resource; `keys` makes count (ints) or for_each (strings) instances,
    `depends_on` names resources by config address (`aws_vpc.main`)."""

    def instance(key: int | str | None) -> dict[str, Any]:
        obj: dict[str, Any] = {"schema_version": 0, "attributes": attributes or {}}
        if key is not None:
            obj["index_key"] = key
        if sensitive:
            obj["sensitive_attributes"] = sensitive
        if depends_on:
            obj["dependencies"] = list(depends_on)
        return obj

    res: dict[str, Any] = {"mode": mode, "type": rtype, "name": name, "provider": provider}
    if module:
        res["module"] = module
    if keys is not None:
        res["each"] = "list" if all(isinstance(k, int) for k in keys) else "map"
    res["instances"] = [instance(k) for k in keys] if keys is not None else [instance(None)]
    return res


def state(
    resources: list[dict[str, Any]],
    *,
    serial: int = 1,
    lineage: str = "lineage-1",
    outputs: dict[str, Any] | None = None,
) -> bytes:
    return json.dumps(
        {
            "version": 4,
            "terraform_version": "1.15.5",
            "serial": serial,
            "lineage": lineage,
            "outputs": outputs or {},
            "resources": resources,
        }
    ).encode()


def chain_graph(*, serial: int = 1, grown: bool = False) -> bytes:
    """The blast-radius fixture, resources named by letter (`terraform_data.<x>`).

    A diamond: b and c depend on r, d on b and c. A cycle: e depends on d,
    f on e, d on f. A 12-deep chain: k01 depends on r, k02 on k01, ... k12 on k11.
    `grown`: and `a` depends on r (the first of r's blast radius).
    """
    deps: dict[str, list[str]] = {
        **({"a": ["r"]} if grown else {}),
        "r": [],
        "b": ["r"],
        "c": ["r"],
        "d": ["b", "c", "f"],
        "e": ["d"],
        "f": ["e"],
        "k01": ["r"],
    }
    for i in range(2, 13):
        deps[f"k{i:02d}"] = [f"k{i - 1:02d}"]
    return state(
        [
            resource(
                "terraform_data",
                name,
                provider=BUILTIN,
                attributes={"input": name},
                depends_on=[f"terraform_data.{d}" for d in targets],
            )
            for name, targets in deps.items()
        ],
        serial=serial,
    )


def shared_history() -> list[bytes]:
    """Six versions: the vpc, its subnets and the first output are written at serial 1
    and held to the end; the rest change, come and go along the way."""
    resources = [
        resource("aws_vpc", "main", attributes={"id": "vpc-1"}),
        resource("aws_subnet", "a", keys=[0, 1, 2], depends_on=["aws_vpc.main"]),
        resource("aws_instance", "web", keys=["x", "y"], depends_on=["aws_subnet.a"]),
    ]
    outputs = {"vpc": {"value": "vpc-1", "type": "string"}}
    document = json.loads(state(resources, serial=1, outputs=outputs))
    versions = [copy.deepcopy(document)]
    changes = [
        lambda d: d["resources"][2]["instances"][0].update(attributes={"size": 2}),
        lambda d: d["resources"].append(resource("aws_eip", "ip", depends_on=["aws_instance.web"])),
        lambda d: d["outputs"].update(ip={"value": "10.0.0.1", "type": "string"}),
        lambda d: d["resources"].pop(),  # the eip goes (and its edges)
        lambda d: d["resources"][2]["instances"].pop(),  # web["y"] goes
    ]
    for serial, change in enumerate(changes, start=2):
        document["serial"] = serial
        change(document)
        versions.append(copy.deepcopy(document))
    return [json.dumps(v).encode() for v in versions]


# What tests calling blast_radius directly keep of its walks (the server's come from Settings).
WALK_LIMITS = WalkLimits(rows=1_000_000, seconds=3600)


def grouped_radius() -> bytes:
    """Three depths of counted resources under `aws_vpc.main`, each instance depending
    on every instance of the group before it (as depends_on on a counted resource
    makes): a radius of 500 members in four groups, 38,000 instance edges."""
    return state(
        [
            resource("aws_vpc", "main"),
            resource("aws_subnet", "a", keys=list(range(100)), depends_on=["aws_vpc.main"]),
            resource("aws_subnet", "b", keys=list(range(100)), depends_on=["aws_vpc.main"]),
            resource("aws_instance", "web", keys=list(range(150)), depends_on=["aws_subnet.a"]),
            resource("aws_eip", "ip", keys=list(range(150)), depends_on=["aws_instance.web"]),
        ]
    )
