"""Plan documents as `terraform show -json` writes them, for tests."""

import json
from typing import Any

AWS_NAME = "registry.terraform.io/hashicorp/aws"


def change(
    address: str,
    actions: list[str],
    before: Any = None,
    after: Any = None,
    *,
    unknown: Any = None,
    before_sensitive: Any = None,
    after_sensitive: Any = None,
    rtype: str | None = None,
    mode: str = "managed",
    **extra: Any,
) -> dict[str, Any]:
    rtype = rtype or address.split(".")[-2].removeprefix("data.")
    return {
        "address": address,
        "mode": mode,
        "type": rtype,
        "name": address.split(".")[-1].split("[")[0],
        "provider_name": AWS_NAME,
        "change": {
            "actions": actions,
            "before": before,
            "after": after,
            "after_unknown": unknown if unknown is not None else {},
            "before_sensitive": before_sensitive if before_sensitive is not None else {},
            "after_sensitive": after_sensitive if after_sensitive is not None else {},
        },
        **extra,
    }


def plan(
    changes: list[dict[str, Any]],
    *,
    prior: dict[str, dict[str, Any]] | None = None,
    outputs: dict[str, Any] | None = None,
    drift: list[dict[str, Any]] | None = None,
    version: str = "1.2",
) -> dict[str, Any]:
    """A plan document; `prior`: the prior state's instances (address -> values)."""
    return {
        "format_version": version,
        "terraform_version": "1.9.8",
        "planned_values": {"root_module": {}},
        "resource_changes": changes,
        "resource_drift": drift or [],
        "output_changes": outputs or {},
        "prior_state": {
            "format_version": "1.0",
            "values": {
                "root_module": {
                    "resources": [
                        {"address": a, "mode": "managed", "values": v, "sensitive_values": {}}
                        for a, v in (prior or {}).items()
                    ]
                }
            },
        },
        "applyable": True,
        "complete": True,
    }


def as_bytes(document: dict[str, Any]) -> bytes:
    return json.dumps(document).encode()
