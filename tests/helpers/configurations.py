"""`configuration` sections as `terraform show -json tfplan` writes them, for tests."""

from typing import Any

from tests.helpers.states import resource, state


def refs(*addresses: str) -> dict[str, Any]:
    """An expression referencing `addresses` (with their prefixes, as Terraform lists)."""
    found: list[str] = []
    for address in addresses:
        found.append(address)
        parts = address.split(".")
        if len(parts) > 2 and parts[0] not in ("var", "module"):
            found.append(".".join(parts[:2]))
    return {"references": found}


def config_resource(
    address: str,
    expressions: dict[str, Any] | None = None,
    *,
    depends_on: list[str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    rtype, name = address.split(".")[-2:]
    found: dict[str, Any] = {
        "address": address,
        "mode": "data" if address.startswith("data.") else "managed",
        "type": rtype,
        "name": name,
        "provider_config_key": "aws",
        "expressions": expressions or {},
        "schema_version": 0,
        **extra,
    }
    if depends_on:
        found["depends_on"] = depends_on
    return found


def module(
    resources: list[dict[str, Any]],
    *,
    calls: dict[str, Any] | None = None,
    variables: dict[str, Any] | None = None,
    outputs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    found: dict[str, Any] = {"resources": resources}
    if calls:
        found["module_calls"] = calls
    if variables:
        found["variables"] = variables
    if outputs:
        found["outputs"] = outputs
    return found


def call(
    source: str, body: dict[str, Any], *, version: str | None = None, **extra: Any
) -> dict[str, Any]:
    found = {"source": source, "module": body, **extra}
    if version:
        found["version_constraint"] = version
    return found


def configuration(root: dict[str, Any], providers: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "provider_config": providers
        or {"aws": {"name": "aws", "full_name": "registry.terraform.io/hashicorp/aws"}},
        "root_module": root,
    }


def plan_with(section: dict[str, Any]) -> dict[str, Any]:
    """A plan with nothing to change and this configuration."""
    return {
        "format_version": "1.2",
        "terraform_version": "1.15.5",
        "planned_values": {"root_module": {}},
        "resource_changes": [],
        "configuration": section,
    }


def network() -> dict[str, Any]:
    """aws_vpc.main, aws_subnet.a (vpc_id), aws_instance.web (subnet_id, vpc_security:
    both), aws_s3_bucket.logs (depends_on web), module.box[0..1] (count, calling
    terraform-aws-modules/s3-bucket/aws ~> 4.0 with the VPC through a variable)."""
    box = module(
        [config_resource("aws_s3_bucket.b", {"tags": refs("var.parent")})],
        variables={"parent": {}},
        outputs={"id": {"expression": refs("aws_s3_bucket.b.id")}},
    )
    return configuration(
        module(
            [
                config_resource("aws_vpc.main", {"cidr_block": {"constant_value": "10.0.0.0/16"}}),
                config_resource("aws_subnet.a", {"vpc_id": refs("aws_vpc.main.id")}),
                config_resource(
                    "aws_instance.web",
                    {
                        "subnet_id": refs("aws_subnet.a.id"),
                        "vpc_security_group_ids": refs("aws_vpc.main.default_security_group_id"),
                    },
                ),
                config_resource("aws_s3_bucket.logs", depends_on=["aws_instance.web"]),
            ],
            calls={
                "box": call(
                    "terraform-aws-modules/s3-bucket/aws",
                    box,
                    version="~> 4.0",
                    count_expression={"constant_value": 2},
                    expressions={"parent": refs("aws_vpc.main.id")},
                )
            },
            variables={"password": {"default": "hunter2-secret", "sensitive": True}},
        )
    )


def network_state(serial: int = 1) -> bytes:
    """The state of `network()`'s configuration, its dependencies closed as Terraform
    writes them."""
    return state(
        [
            resource("aws_vpc", "main", attributes={"id": "vpc-1"}),
            resource("aws_subnet", "a", attributes={"id": "s-1"}, depends_on=["aws_vpc.main"]),
            resource(
                "aws_instance",
                "web",
                attributes={"id": "i-1"},
                depends_on=["aws_subnet.a", "aws_vpc.main"],
            ),
            resource(
                "aws_s3_bucket",
                "logs",
                attributes={"id": "logs"},
                depends_on=["aws_instance.web", "aws_subnet.a", "aws_vpc.main"],
            ),
            resource(
                "aws_s3_bucket",
                "b",
                module="module.box[0]",
                attributes={"id": "b0"},
                depends_on=["aws_vpc.main"],
            ),
            resource(
                "aws_s3_bucket",
                "b",
                module="module.box[1]",
                attributes={"id": "b1"},
                depends_on=["aws_vpc.main"],
            ),
        ],
        serial=serial,
    )
