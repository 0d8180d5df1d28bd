"""A leased write merged into the current version: pure, no I/O.

A lease's Terraform sees a snapshot (the version its plan was made from, plus its own
writes) and POSTs whole states against it. What one POST changes against the previous
snapshot (instances added, changed or removed; outputs changed) is applied to the
current head, so that other leases' writes since stay. An instance or output changed
by this POST that differs in the head from the snapshot (another writer touched it
meanwhile) is a conflict: nothing is merged.
"""

import functools
from collections.abc import Iterable, Set
from dataclasses import dataclass, field
from typing import Any

import orjson

from app.tfstate.address import index_suffix

OUTPUT_PREFIX = "output."  # a footprint names an output as `output.NAME`

# An instance as a state holds it: its resource (whose fields but `instances` are the
# instance's too), and the instance
Entry = tuple[dict[str, Any], dict[str, Any]]


def meta(resource: dict[str, Any]) -> dict[str, Any]:
    """A resource's own fields: all but its instances."""
    return {k: v for k, v in resource.items() if k != "instances"}


def same(a: Entry | None, b: Entry | None) -> bool:
    """Whether two instances are equal, their resources' own fields included."""
    if a is None or b is None:
        return a is b
    if a[1] != b[1]:
        return False
    first, second = a[0], b[0]
    return first is second or all(
        first.get(k) == second.get(k) for k in first.keys() | second.keys() if k != "instances"
    )


def resource_of(resource: dict[str, Any]) -> str:
    """The resource's own address, module keys kept: what groups its instances."""
    mode = "data." if resource.get("mode") == "data" else ""
    local = f"{mode}{resource.get('type')}.{resource.get('name')}"
    module = resource.get("module")
    return f"{module}.{local}" if module else local


@functools.lru_cache(maxsize=65536)  # the keys of a state recur in every document of it
def _suffix(index_key: str | int | None) -> str:
    return index_suffix(index_key)


def instances(
    document: dict[str, Any], skip: Set[str] = frozenset(), only: Set[str] | None = None
) -> dict[str, Entry]:
    """Every instance of a v4 state by its address (a deposed object has its own), but
    those of the resources `skip` names; with `only`, of the resources it names alone."""
    found: dict[str, Entry] = {}
    for resource in document.get("resources") or []:
        base = resource_of(resource)
        if base in skip or (only is not None and base not in only):
            continue
        for instance in resource.get("instances") or []:
            key = instance.get("index_key")
            address = base + (_suffix(key) if isinstance(key, str | int) else "")
            if (deposed := instance.get("deposed")) is not None:
                address = f"{address} (deposed object {deposed})"
            found[address] = (resource, instance)
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


Encoded = dict[str, bytes | None]


def encoded(document: dict[str, Any]) -> Encoded:
    """Each resource's JSON by its address; None for one whose address recurs (each of
    its resources is then compared instance by instance). A document's, worked out once,
    serves each diff against it (`changes`)."""
    found: dict[str, bytes | None] = {}
    for resource in document.get("resources") or []:
        key = resource_of(resource)
        try:
            found[key] = None if key in found else orjson.dumps(resource)
        except TypeError:  # an integer past 64 bits: compared instance by instance
            found[key] = None
    return found


def _unchanged(old: Encoded, new: Encoded) -> set[str]:
    """The resources whose JSON is the same in both: the same instances and fields, none
    of which needs comparing (serializing is many times faster than comparing the
    parsed values; different bytes say nothing, the instances are then compared)."""
    return {key for key, data in old.items() if data is not None and new.get(key) == data}


def changes(
    before: dict[str, Any],
    after: dict[str, Any],
    known: tuple[Encoded, Encoded] | None = None,
) -> Changes:
    """What `after` changes of `before` (two v4 states); `known`: their `encoded`, when
    worked out already."""
    old_encoded, new_encoded = known if known is not None else (encoded(before), encoded(after))
    skip = _unchanged(old_encoded, new_encoded)
    old, new = instances(before, skip), instances(after, skip)
    changed = {a: new.get(a) for a in old.keys() | new.keys() if not same(old.get(a), new.get(a))}
    old_out, new_out = before.get("outputs") or {}, after.get("outputs") or {}
    outputs = {
        n: new_out.get(n)
        for n in old_out.keys() | new_out.keys()
        if old_out.get(n) != new_out.get(n)
    }
    return Changes(changed, outputs)


def _resource_keys(addresses: Iterable[str]) -> set[str]:
    """Every address a resource holding one of `addresses` may have: an instance's
    address is its resource's, then its index key (`[`) and deposed mark (` (`), if any."""
    keys: set[str] = set()
    for address in addresses:
        keys.add(address)
        keys.update(address[:i] for i, c in enumerate(address) if c in "[ ")
    return keys


@dataclass(frozen=True)
class Merged:
    document: dict[str, Any] | None  # None when there are conflicts (or nothing to write)
    changes: Changes
    conflicts: list[str]  # instances and outputs another writer changed since the snapshot
    # when every change is of instances where they are (each replacing the head's at its
    # address, in a resource whose own fields stay, naming the same dependencies, no
    # output changed): the positions of their resources in the document; else None
    in_place: tuple[int, ...] | None = None


def merge(
    head: dict[str, Any],
    snapshot: dict[str, Any],
    written: dict[str, Any],
    found: Changes | None = None,
) -> Merged:
    """`written`'s changes against `snapshot` (`found`, when already known), applied to
    `head` as its next version (serial + 1, head's lineage); conflicts when `head`
    differs from `snapshot` where `written` changes it. No changes: no document. The
    head is left as it is: the merged document shares all but the resources it changes
    with it (a write changes a few instances of thousands), so neither is to be changed
    in place after."""
    found = changes(snapshot, written) if found is None else found
    if not found:
        return Merged(None, found, [])
    # the instances at the changed addresses: the resources that may hold them alone
    keys = _resource_keys(found.instances)
    head_instances, snap_instances = instances(head, only=keys), instances(snapshot, only=keys)
    head_out, snap_out = head.get("outputs") or {}, snapshot.get("outputs") or {}
    conflicts = [
        a for a in found.instances if not same(head_instances.get(a), snap_instances.get(a))
    ]
    conflicts += [OUTPUT_PREFIX + n for n in found.outputs if head_out.get(n) != snap_out.get(n)]
    if conflicts:
        return Merged(None, found, sorted(conflicts))
    document = {**head}
    touched = _patch(document, head_instances, found.instances)
    outputs = dict(head_out)
    for name, value in found.outputs.items():
        if value is None:
            outputs.pop(name, None)
        else:
            outputs[name] = value
    document["outputs"] = outputs
    document["serial"] = int(head.get("serial") or 0) + 1
    document["terraform_version"] = written.get("terraform_version", head.get("terraform_version"))
    if written.get("check_results") != snapshot.get("check_results"):
        document["check_results"] = written.get("check_results")
    in_place = touched if _in_place(head_instances, found) else None
    return Merged(document, found, [], in_place)


_DEPENDENCIES = ("dependencies", "depends_on")


def _in_place(present: dict[str, Entry], found: Changes) -> bool:
    """Whether every change replaces an instance where it is (see Merged.in_place)."""
    if found.outputs:
        return False
    for address, entry in found.instances.items():
        old = present.get(address)
        if entry is None or old is None or resource_of(entry[0]) != resource_of(old[0]):
            return False
        if any(entry[1].get(k) != old[1].get(k) for k in _DEPENDENCIES):
            return False
        if entry[0] is not old[0] and meta(entry[0]) != meta(old[0]):
            return False
    return True


def _patch(
    document: dict[str, Any], present: dict[str, Entry], changed: dict[str, Entry | None]
) -> tuple[int, ...]:
    """Replace, remove and add the `changed` instances of `document` (whose instances are
    `present`): its resources list and the resources changed are new objects, the rest
    is shared; a resource left without instances goes, as Terraform drops it. The
    positions of the resources changed, when none went."""
    resources: list[dict[str, Any]] = list(document.get("resources") or [])
    at_key = {resource_of(r): n for n, r in enumerate(resources)}
    touched: set[int] = set()

    def own(key: str) -> dict[str, Any]:
        """The resource at `key`, copied once (its instances list too)."""
        n = at_key[key]
        if n not in touched:
            touched.add(n)
            resources[n] = {**resources[n], "instances": list(resources[n]["instances"])}
        return resources[n]

    for address, entry in sorted(changed.items()):
        old = present.get(address)
        key = None if entry is None else resource_of(entry[0])
        if old is not None:
            resource = own(resource_of(old[0]))
            members = resource["instances"]
            at = next(n for n, i in enumerate(members) if i is old[1])
            if entry is not None and key == resource_of(old[0]):  # changed where it is
                resource.update(meta(entry[0]))
                members[at] = entry[1]
                continue
            del members[at]
        if entry is None or key is None:
            continue
        if key not in at_key:
            at_key[key] = len(resources)
            resources.append({**meta(entry[0]), "instances": []})
        own(key)["instances"].append(entry[1])
    kept = [r for r in resources if r.get("instances")]
    document["resources"] = kept
    return tuple(sorted(touched)) if len(kept) == len(resources) else ()
