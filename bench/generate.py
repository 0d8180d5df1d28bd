"""Realistic Terraform v4 states of any size, for benchmarks and scale tests.

Shape: a few modules (one with for_each keys), resources with count and
for_each instances, provider-shaped attribute trees of about 1 KB, and a
layered dependency DAG: each instance depends on `deps` resources created
before it, a share of them fan-in hubs (a VPC, an IAM role) that hundreds of
instances depend on. Dependencies name single-instance resources, so the
state has exactly `deps` edges per instance (the first few have fewer).
Resources are written in Terraform's order (module, mode, type, name).
"""

import random
import uuid
from typing import Any

_TYPES = (
    "aws_instance",
    "aws_s3_bucket",
    "aws_security_group",
    "aws_lambda_function",
    "aws_iam_policy",
    "aws_route53_record",
    "aws_db_instance",
    "aws_subnet",
)
_HUB_TYPES = ("aws_vpc", "aws_iam_role", "aws_kms_key")
_PROVIDER = 'provider["registry.terraform.io/hashicorp/aws"]'


def _attributes(rng: random.Random, rtype: str, name: str, index: int) -> dict[str, Any]:
    ident = f"{rtype[4:7]}-{rng.getrandbits(48):012x}"
    return {
        "id": ident,
        "arn": f"arn:aws:{rtype[4:]}:eu-west-1:123456789012:{ident}",
        "name": f"{name}-{index}",
        "public_access": rng.random() < 0.05,
        "tags": {
            "Name": f"{name}-{index}",
            "team": rng.choice(["core", "data", "web"]),
            "env": rng.choice(["prod", "stage"]),
        },
        "tags_all": {"Name": f"{name}-{index}", "managed_by": "terraform"},
        "timeouts": None,
        "network": {
            "subnet_ids": [f"subnet-{rng.getrandbits(32):08x}" for _ in range(3)],
            "security_group_ids": [f"sg-{rng.getrandbits(32):08x}" for _ in range(2)],
            "private_ip": f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(256)}",
            "ipv6_addresses": [],
        },
        "settings": [
            {"key": f"setting_{k}", "value": f"{rng.getrandbits(64):016x}", "enabled": bool(k % 2)}
            for k in range(4)
        ],
        "size": rng.choice([8, 16, 32, 64, 128]),
        "created": f"2026-11-0{rng.randrange(1, 10)}T12:00:00Z",
    }


def generate_state(
    instances: int,
    *,
    deps: int = 3,
    hubs: int = 12,
    seed: int = 0,
    serial: int = 1,
    lineage: str | None = None,
) -> dict[str, Any]:
    """A v4 state with `instances` resource instances and about `deps` edges each."""
    rng = random.Random(seed)
    resources: list[dict[str, Any]] = []
    single: list[str] = []  # dependency targets: single-instance resources, by config address
    hub_addresses: list[str] = []
    modules = [None, "module.network", "module.app", 'module.svc["api"]', 'module.svc["web"]']
    made = 0
    while made < instances:
        n = len(resources)
        is_hub = n < hubs
        module = None if is_hub else modules[n % len(modules)]
        rtype = _HUB_TYPES[n % len(_HUB_TYPES)] if is_hub else _TYPES[n % len(_TYPES)]
        name = f"r{n}"
        shape = "single" if is_hub else rng.choice(["single", "single", "count", "for_each"])
        size = 1 if shape == "single" else min(rng.randrange(2, 6), instances - made)
        config_module = module.split("[")[0] if module else None
        address = f"{config_module}.{rtype}.{name}" if config_module else f"{rtype}.{name}"
        pool = hub_addresses + single
        chosen: list[str] = []
        if pool:
            for _ in range(min(deps, len(pool))):
                # a third of dependencies go to hubs: fan-in of hundreds
                source = hub_addresses if hub_addresses and rng.random() < 0.34 else pool
                candidate = rng.choice(source[-200:] if source is single else source)
                if candidate not in chosen:
                    chosen.append(candidate)
            while len(chosen) < min(deps, len(pool)):
                candidate = rng.choice(pool)
                if candidate not in chosen:
                    chosen.append(candidate)
        keys: list[Any] = (
            [None]
            if shape == "single"
            else list(range(size))
            if shape == "count"
            else [f"key-{k}" for k in range(size)]
        )
        resource: dict[str, Any] = {
            "mode": "managed",
            "type": rtype,
            "name": name,
            "provider": _PROVIDER,
            "instances": [],
        }
        if module:
            resource = {"module": module, **resource}
        for index, key in enumerate(keys):
            instance: dict[str, Any] = {"schema_version": 1}
            if key is not None:
                instance["index_key"] = key
            instance["attributes"] = _attributes(rng, rtype, name, index)
            instance["sensitive_attributes"] = [[{"type": "get_attr", "value": "settings"}]]
            instance["private"] = "eyJzY2hlbWFfdmVyc2lvbiI6IjEifQ=="
            if chosen:
                instance["dependencies"] = sorted(chosen)
            resource["instances"].append(instance)
        resources.append(resource)
        made += len(keys)
        if shape == "single":
            (hub_addresses if is_hub else single).append(address)
    return {
        "version": 4,
        "terraform_version": "1.15.5",
        "serial": serial,
        "lineage": lineage or str(uuid.UUID(int=rng.getrandbits(128))),
        "outputs": {"vpc_id": {"value": "vpc-0123", "type": "string"}},
        # Terraform writes resources sorted by module, mode, type and name
        "resources": sorted(
            resources, key=lambda r: (r.get("module", ""), r["mode"], r["type"], r["name"])
        ),
        "check_results": None,
    }


def generate_plain_lists(instances: int, *, seed: int = 0, window: int = 200) -> dict[str, Any]:
    """A v4 state whose dependency lists are written by hand (or before Terraform 0.13):
    not transitively closed, each resource naming a few hubs and recent neighbours.
    `aws_instance.r0` (10 instances) is the first hub; every other resource names it or
    one after it, so each other instance depends on r0[0], transitively, many direct
    hops away."""
    rng = random.Random(seed)
    resources: list[dict[str, Any]] = []
    addresses: list[str] = []
    made = 0
    while made < instances:
        n = len(resources)
        size = 10 if n == 0 else min(rng.choice([1, 1, 1, 2, 3, 4]), instances - made)
        rtype = "aws_instance" if n == 0 else _TYPES[n % len(_TYPES)]
        chosen: set[str] = set()
        if addresses:
            hubs = addresses[:4]
            chosen.add(rng.choice(hubs))
            recent = addresses[-window:]
            chosen.update(rng.choice(recent) for _ in range(2))
        instances_of = [
            {
                "schema_version": 1,
                **({"index_key": key} if size > 1 or n == 0 else {}),
                "attributes": {"id": f"{rtype[4:7]}-{n}-{key}", "name": f"r{n}-{key}"},
                **({"dependencies": sorted(chosen)} if chosen else {}),
            }
            for key in range(size)
        ]
        resources.append(
            {
                "mode": "managed",
                "type": rtype,
                "name": f"r{n}",
                "provider": _PROVIDER,
                **({"each": "list"} if size > 1 or n == 0 else {}),
                "instances": instances_of,
            }
        )
        addresses.append(f"{rtype}.r{n}")
        made += size
    return {
        "version": 4,
        "terraform_version": "0.12.31",
        "serial": 1,
        "lineage": str(uuid.UUID(int=rng.getrandbits(128))),
        "outputs": {},
        "resources": sorted(resources, key=lambda r: (r["mode"], r["type"], r["name"])),
    }
