"""States of `terraform_data` instances and Terraform plans of them (the JSON of
`terraform show -json`), for the lease tests."""

import json
from typing import Any

PROVIDER = 'provider["terraform.io/builtin/terraform"]'


def address(name: str) -> str:
    return f"terraform_data.{name}"


def state_doc(serial: int, values: dict[str, str], outputs: dict[str, str] | None = None) -> bytes:
    """A v4 state: one `terraform_data.<name>` per entry (its id the name, its input the
    value), and string outputs."""
    return json.dumps(
        {
            "version": 4,
            "terraform_version": "1.15.5",
            "serial": serial,
            "lineage": "lineage-leases",
            "outputs": {k: {"value": v, "type": "string"} for k, v in (outputs or {}).items()},
            "resources": [
                {
                    "mode": "managed",
                    "type": "terraform_data",
                    "name": name,
                    "provider": PROVIDER,
                    "instances": [
                        {"schema_version": 0, "attributes": {"id": name, "input": value}}
                    ],
                }
                for name, value in values.items()
            ],
        },
        indent=2,
    ).encode()


def plan_doc(
    prior: dict[str, str], changed: dict[str, str], outputs: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A plan made from a state holding `prior`, updating the instances of `changed`."""
    return {
        "format_version": "1.2",
        "terraform_version": "1.15.5",
        "resource_changes": [
            {
                "address": address(name),
                "mode": "managed",
                "type": "terraform_data",
                "name": name,
                "provider_name": "terraform.io/builtin/terraform",
                "change": {
                    "actions": ["update"],
                    "before": {"id": name, "input": prior[name]},
                    "after": {"id": name, "input": value},
                    "after_unknown": {},
                },
            }
            for name, value in changed.items()
        ],
        "output_changes": {
            name: {"actions": ["update"], "before": "x", "after": "y"} for name in outputs
        },
        "prior_state": {
            "format_version": "1.0",
            "values": {
                "root_module": {
                    "resources": [
                        {
                            "address": address(name),
                            "mode": "managed",
                            "type": "terraform_data",
                            "name": name,
                            "values": {"id": name, "input": value},
                        }
                        for name, value in prior.items()
                    ]
                }
            },
        },
    }
