"""A state of dense fan-in: `keyed` for_each instances, each depending on a `counted`
count resource (2,500 x 2,500 by default: about 660 KB, 6.25 million edges instance to
instance)."""

import json
from typing import Any

SOURCE = "terraform_data.source"
READER = "terraform_data.reader"


def fan_in_state(counted: int = 2_500, keyed: int = 2_500, *, serial: int = 1) -> bytes:
    def instance(key: int | str, extra: dict[str, Any]) -> dict[str, Any]:
        return {
            "index_key": key,
            "schema_version": 0,
            "attributes": {"id": f"{key}-{serial:04d}"},
            "sensitive_attributes": [],
            **extra,
        }

    resources = [
        {
            "mode": "managed",
            "type": "terraform_data",
            "name": "reader",
            "provider": 'provider["terraform.io/builtin/terraform"]',
            "each": "map",
            "instances": [instance(f"k{i:04d}", {"dependencies": [SOURCE]}) for i in range(keyed)],
        },
        {
            "mode": "managed",
            "type": "terraform_data",
            "name": "source",
            "provider": 'provider["terraform.io/builtin/terraform"]',
            "each": "list",
            "instances": [instance(i, {}) for i in range(counted)],
        },
    ]
    return json.dumps(
        {
            "version": 4,
            "terraform_version": "1.15.5",
            "serial": serial,
            "lineage": "fan-in-lineage",
            "outputs": {},
            "resources": resources,
        }
    ).encode()
