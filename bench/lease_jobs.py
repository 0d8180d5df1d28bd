"""What a job of the lease cases (bench/leases.py) does with its state, Terraform's part:
read the state it got and write the next one. Its own module, imported by the jobs'
processes without the rest of the benchmark."""

from typing import Any

from app.jsonutil import dumps, read
from app.tfstate.address import instance_address


def instances(state: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(address, resource, instance) of each instance, in document order."""
    return [
        (
            instance_address(
                r.get("module"), r["mode"], r["type"], r["name"], i.get("index_key"), None
            ),
            r,
            i,
        )
        for r in state["resources"]
        for i in r["instances"]
    ]


def changed(document: dict[str, Any], address: str, value: str) -> bytes:
    """`document` (changed in place) with the instance at `address` tagged `value`, as
    the next serial."""
    for found, _, instance in instances(document):
        if found == address:
            instance["attributes"]["tags"] = {"job": value}
    document["serial"] += 1
    return dumps(document)


def next_state(data: bytes, address: str, value: str) -> bytes:
    """A job's next state from the bytes it read (in a job's process)."""
    return changed(read(data), address, value)


def warm() -> None:
    """Nothing: started, a job's process has imported this module."""
