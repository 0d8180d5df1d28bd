"""What this process remembers of the version it wrote last, per state: each resource's
bytes (their digest) and what the write made of its instances (their references and
rows). The next write of that state keeps the rows of every resource whose bytes are
the same without reading the resource (app/tfstate/skim.py): for a Terraform apply
that changed a few instances of thousands, most of the write's parse and scan.

What is remembered belongs to one version, which never changes: it is used only while
that version is the state's current one (under the state's row lock), so a version
written by another process, or never committed, is simply not found. Bounded by the
instances held, the least recently written states forgotten first.
"""

from collections import OrderedDict
from collections.abc import Sequence
from typing import NamedTuple, cast
from uuid import UUID

from app.tfstate.parse import InstanceShape
from app.tfstate.scan import InstanceRef

# About 250 bytes each: 50 MB at most.
MAX_INSTANCES = 200_000


class Remembered(NamedTuple):
    """A resource's instances as a write made them, in order: references, rows, addresses."""

    refs: tuple[InstanceRef, ...]
    row_ids: tuple[UUID, ...]
    addresses: tuple[str, ...]


Resources = dict[bytes, Remembered]  # by the digest of the resource's bytes


class _Version(NamedTuple):
    version_id: UUID
    resources: Resources
    instances: int


def remembered_resources(
    digests: Sequence[bytes], refs: Sequence[InstanceShape], row_ids: Sequence[UUID]
) -> Resources:
    """A version's resources by their digests (in document order), from its instances'
    references and rows in document order (the references a write makes are InstanceRefs:
    app/graph/write/stream.py). CPU-bound: a pass over the instances."""
    resources: Resources = {}
    indexes = [ref.resource_index for ref in refs]
    start = 0
    for end in range(1, len(refs) + 1):
        if end == len(refs) or indexes[end] != indexes[start]:
            listed = cast(tuple[InstanceRef, ...], tuple(refs[start:end]))
            resources[digests[indexes[start]]] = Remembered(
                listed, tuple(row_ids[start:end]), tuple(ref.address for ref in listed)
            )
            start = end
    return resources


class LastWrites:
    def __init__(self, max_instances: int = MAX_INSTANCES) -> None:
        self._max = max_instances
        self._held = 0
        self._states: OrderedDict[UUID, _Version] = OrderedDict()

    def resources(self, state_id: UUID, version_id: UUID) -> Resources | None:
        """What was remembered of the state's version `version_id`; None if nothing."""
        found = self._states.get(state_id)
        if found is None or found.version_id != version_id:
            return None
        self._states.move_to_end(state_id)
        return found.resources

    def remember(self, state_id: UUID, version_id: UUID, resources: Resources) -> None:
        """The state's version `version_id` (remembered_resources), in place of any other."""
        self.forget(state_id)
        instances = sum(len(found.row_ids) for found in resources.values())
        if instances > self._max:
            return
        self._states[state_id] = _Version(version_id, resources, instances)
        self._held += instances
        while self._held > self._max:
            _, oldest = self._states.popitem(last=False)
            self._held -= oldest.instances

    def forget(self, state_id: UUID) -> None:
        found = self._states.pop(state_id, None)
        if found is not None:
            self._held -= found.instances


# One per process: a state's writes run one at a time; used on the event loop's thread.
last_writes = LastWrites()
