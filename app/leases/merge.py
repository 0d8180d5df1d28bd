"""A leased write merged into the current version: pure, no I/O.

A lease's Terraform sees a snapshot (the version its plan was made from, plus its own
writes) and POSTs whole states against it. What one POST changes against the previous
snapshot (instances added, changed or removed; outputs changed) is applied to the
current head, so that other leases' writes since stay. An instance or output changed
by this POST that differs in the head from the snapshot (another writer touched it
meanwhile) is a conflict: nothing is merged.
"""

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from app.tfstate.address import instance_address

OUTPUT_PREFIX = "output."  # a footprint names an output as `output.NAME`

# An instance as a state holds it: its resource's fields but `instances`, and the instance
Entry = tuple[dict[str, Any], dict[str, Any]]


def resource_of(resource: dict[str, Any]) -> str:
    """The resource's own address, module keys kept: what groups its instances."""
    mode = "data." if resource.get("mode") == "data" else ""
    local = f"{mode}{resource.get('type')}.{resource.get('name')}"
    module = resource.get("module")
    return f"{module}.{local}" if module else local


def instances(document: dict[str, Any]) -> dict[str, Entry]:
    """Every instance of a v4 state by its address (a deposed object has its own)."""
    found: dict[str, Entry] = {}
    for resource in document.get("resources") or []:
        meta = {k: v for k, v in resource.items() if k != "instances"}
        for instance in resource.get("instances") or []:
            address = instance_address(
                resource.get("module"),
                str(resource.get("mode")),
                str(resource.get("type")),
                str(resource.get("name")),
                instance.get("index_key"),
                instance.get("deposed"),
            )
            found[address] = (meta, instance)
    return found


@dataclass(frozen=True)
class Changes:
    """What one write changed against its snapshot: None for a removed one."""

    instances: dict[str, Entry | None] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)

    def addresses(self) -> list[str]:
        """Every changed instance and output (`output.NAME`), sorted."""
        return sorted([*self.instances, *(OUTPUT_PREFIX + name for name in self.outputs)])

    def __bool__(self) -> bool:
        return bool(self.instances or self.outputs)


def changes(before: dict[str, Any], after: dict[str, Any]) -> Changes:
    """What `after` changes of `before` (two v4 states)."""
    old, new = instances(before), instances(after)
    changed = {a: new.get(a) for a in old.keys() | new.keys() if old.get(a) != new.get(a)}
    old_out, new_out = before.get("outputs") or {}, after.get("outputs") or {}
    outputs = {
        n: new_out.get(n)
        for n in old_out.keys() | new_out.keys()
        if old_out.get(n) != new_out.get(n)
    }
    return Changes(changed, outputs)


@dataclass(frozen=True)
class Merged:
    document: dict[str, Any] | None  # None when there are conflicts (or nothing to write)
    changes: Changes
    conflicts: list[str]  # instances and outputs another writer changed since the snapshot


def merge(head: dict[str, Any], snapshot: dict[str, Any], written: dict[str, Any]) -> Merged:
    """`written`'s changes against `snapshot`, applied to `head` as its next version
    (serial + 1, head's lineage); conflicts when `head` differs from `snapshot` where
    `written` changes it. No changes: no document."""
    found = changes(snapshot, written)
    if not found:
        return Merged(None, found, [])
    head_instances, snap_instances = instances(head), instances(snapshot)
    head_out, snap_out = head.get("outputs") or {}, snapshot.get("outputs") or {}
    conflicts = [a for a in found.instances if head_instances.get(a) != snap_instances.get(a)]
    conflicts += [OUTPUT_PREFIX + n for n in found.outputs if head_out.get(n) != snap_out.get(n)]
    if conflicts:
        return Merged(None, found, sorted(conflicts))
    merged = {**head_instances, **{a: e for a, e in found.instances.items() if e is not None}}
    for address, entry in found.instances.items():
        if entry is None:
            merged.pop(address, None)
    outputs = {**head_out, **{n: v for n, v in found.outputs.items() if v is not None}}
    for name, value in found.outputs.items():
        if value is None:
            outputs.pop(name, None)
    document = {k: copy.deepcopy(v) for k, v in head.items() if k not in ("resources", "outputs")}
    document["serial"] = int(head.get("serial") or 0) + 1
    document["terraform_version"] = written.get("terraform_version", head.get("terraform_version"))
    document["outputs"] = copy.deepcopy(outputs)
    document["resources"] = render(merged, (head, written))
    if written.get("check_results") != snapshot.get("check_results"):
        document["check_results"] = copy.deepcopy(written.get("check_results"))
    return Merged(document, found, [])


def _order(documents: Iterable[dict[str, Any]]) -> tuple[list[str], dict[str, int]]:
    """Resources, and instances, in the order they first appear in `documents`."""
    resources: list[str] = []
    position: dict[str, int] = {}
    seen: set[str] = set()
    for document in documents:
        for resource in document.get("resources") or []:
            if (key := resource_of(resource)) not in seen:
                seen.add(key)
                resources.append(key)
        for address in instances(document):
            position.setdefault(address, len(position))
    return resources, position


def render(entries: dict[str, Entry], order_from: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The `resources` list of `entries`, in the order of `order_from` (a resource left
    without instances is gone, as Terraform drops it)."""
    resources, position = _order(order_from)
    grouped: dict[str, tuple[dict[str, Any], list[tuple[int, dict[str, Any]]]]] = {}
    for address, (meta, instance) in entries.items():
        key = resource_of(meta)
        _, members = grouped.setdefault(key, (meta, []))
        members.append((position.get(address, len(position)), instance))
    rank = {key: i for i, key in enumerate(resources)}
    out = []
    for key in sorted(grouped, key=lambda k: (rank.get(k, len(rank)), k)):
        meta, members = grouped[key]
        members.sort(key=lambda m: m[0])
        out.append({**copy.deepcopy(meta), "instances": [copy.deepcopy(i) for _, i in members]})
    return out
