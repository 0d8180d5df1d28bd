"""A new version's instances diffed against the current version's rows, a batch at a
time, in a worker thread: which rows are kept, and the COPY records of the new ones."""

import itertools
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from uuid import UUID

from app import crypto
from app.graph.ids import time_ordered_ids
from app.graph.sensitive import Path, Stored, stored_instance
from app.graph.write.memo import Remembered
from app.tfstate import InstanceRow, NormalizedState, ScannedState
from app.tfstate.parse import InstanceShape
from app.tfstate.remote import REMOTE_STATE, holds_output_value, output_values
from app.tfstate.scan import InstanceRef, ScannedInstance, ScannedResource
from app.tfstate.skim import SkimmedState, SkippedResource
from app.tfstate.stream import NotStreamable

# Instances matched, normalized and copied at a time: a streamed write holds a batch of
# them as parsed, and what the rest of the write needs of each (an InstanceRef); two
# batches while one is copied and the next built. 250, not 500: two 100,000-instance
# writes at once peaked 7 MiB lower, a first import's stages took no more CPU.
BATCH_INSTANCES = 250

CurrentRow = tuple[UUID, bytes, bytes | None]  # id, content hash, raw hash
# a new row: its position, the row as stored, its content hash and raw hash
_NewRow = tuple[int, Stored[InstanceRow], bytes, bytes | None]
_Names = tuple[Any, Any, Any, Any]  # mode, type, name, module path
_PENDING = UUID(int=0)  # the id of a new row until its batch is given ids
_UNLOOKED = 64  # instances of changed resources not looked up by raw hash (RowStream)


_Item = ScannedInstance | InstanceRow | SkippedResource[Remembered]


def _items(
    state: NormalizedState | ScannedState, remembered: Mapping[bytes, Remembered] | None
) -> Iterator[_Item]:
    """The state's instances in document order; a skimmed state's remembered resources
    each as one SkippedResource."""
    if isinstance(state, SkimmedState) and remembered:
        return state.items(remembered)
    if isinstance(state, ScannedState):
        return state.instances()
    return iter(state.instances)


class RowStream:
    """A new version's instances against the current version's rows (by address), a
    batch at a time (CPU-bound: next_batch runs in a worker thread).

    Which instances keep the current version's row: a scanned instance whose raw hash a
    current row has (app/tfstate/scan.py) without normalizing it; any other instance,
    normalized, when its content hash (Stored.digest) is its address' row's. A raw hash
    covers the document's bytes, secrets included: with a key it is keyed (ring.mac), so a
    stored one confirms no guess.

    With what the write of the current version remembered (app/graph/write/memo.py), a
    skimmed resource whose bytes are the same keeps its rows without being read."""

    def __init__(
        self,
        current: dict[str, CurrentRow],
        state: NormalizedState | ScannedState,
        ids: tuple[UUID, UUID, int],
        linked: Callable[[InstanceRow], list[Path]],
        remembered: Mapping[bytes, Remembered] | None = None,
    ) -> None:
        self.current = current  # popped as kept or replaced: the rest are removed
        # With a version remembered, the resources read are those whose bytes changed:
        # their instances' raw hashes are not their rows', but in a document written again
        # in another layout. Looked up (and this built) once more than a few are read.
        self._by_raw: dict[bytes, str] | None = None
        self._unlooked = _UNLOOKED if remembered else 0
        self._items = _items(state, remembered)
        self._output_values = output_values(state.outputs)  # asked of each batch
        self._state_id, self._version_id, self._serial = ids
        self._ring = crypto.keyring()
        self._linked = linked  # a data source's outputs sensitive in their producer
        self._seen: set[str] = set()  # addresses so far: a duplicate is refused
        self.refs: list[InstanceShape] = []  # every instance in document order
        self.row_ids: list[UUID] = []  # the row of each: kept, or inserted
        self.new: list[int] = []  # positions of the inserted rows
        self.changed = 0  # of those, the ones replacing a row at their address
        self.replaced: dict[UUID, str] = {}  # the current rows they replace, their addresses
        self.rehashed: list[tuple[UUID, bytes]] = []  # kept rows whose raw hash was not this
        self.remote: dict[int, InstanceRow] = {}  # inserted data sources, as parsed (links)
        self.holds_output_value = False  # an inserted row holds an output's value (lineage)
        # one object for equal names and dependency lists of the refs (many share them)
        self._shared: dict[Any, Any] = {}
        self._named: ScannedResource | None = None  # the resource whose names are _names
        self._names: _Names = ("", "", "", None)

    def _ref(self, ref: InstanceShape) -> InstanceRef:
        """What the write keeps of `ref`, holding shared objects for its names and
        dependency lists (a state's refs live until its write ends; many share them).
        Built once: a first import makes one for every instance."""
        mode, type_, name, module_path = self._shared_names(
            ref.mode, ref.type, ref.name, ref.module_path
        )
        return InstanceRef(
            ref.address,
            ref.resource_index,
            ref.instance_index,
            mode,
            type_,
            name,
            module_path,
            ref.index_key,
            ref.deposed,
            self._shared_list(ref.dependencies_raw),
            self._shared_list(ref.depends_on_raw),
        )

    def _kept_ref(self, item: ScannedInstance, address: str) -> InstanceRef:
        """`_ref(item.ref(address))` in one step, its resource's names looked up once for
        all of its instances (they come one after the other)."""
        resource = item.resource
        if resource is not self._named:
            fields = resource.raw
            self._names = self._shared_names(
                fields["mode"], fields["type"], fields["name"], fields.get("module")
            )
            self._named = resource
        raw = item.raw
        mode, type_, name, module_path = self._names
        return InstanceRef(
            address,
            resource.index,
            item.position,
            mode,
            type_,
            name,
            module_path,
            raw.get("index_key"),
            raw.get("deposed"),
            self._shared_list(raw.get("dependencies")),
            self._shared_list(raw.get("depends_on")),
        )

    def _shared_names(self, mode: Any, type_: Any, name: Any, module_path: Any) -> _Names:
        """The names, each string as the one object the write holds for it."""
        shared = self._shared
        return (
            shared.setdefault(mode, mode) if type(mode) is str else mode,
            shared.setdefault(type_, type_) if type(type_) is str else type_,
            shared.setdefault(name, name) if type(name) is str else name,
            shared.setdefault(module_path, module_path)
            if type(module_path) is str
            else module_path,
        )

    def _shared_list(self, value: Any) -> Any:
        """One list object for equal dependency lists; anything else as it is."""
        if type(value) is not list:
            return value
        shared = self._shared
        key = tuple(value)
        found = shared.get(key)
        if found is None:
            found = shared[key] = [shared.setdefault(v, v) for v in value]
        return found

    def next_batch(self) -> list[tuple[object, ...]] | None:
        """The COPY records of the next batch's new rows; None after the last batch."""
        batch = list(itertools.islice(self._items, BATCH_INSTANCES))
        if not batch:
            return None
        new: list[_NewRow] = []
        for item in batch:
            if isinstance(item, SkippedResource):
                self._skip(item)
                continue
            if isinstance(item, ScannedInstance):
                raw = self._ring.mac(item.raw_hash) if self._ring.encrypting else item.raw_hash
                address = self._raw_address(raw)
                # popped: of two equal instances (a duplicate address) the second is normalized
                if address is not None and address not in self._seen:
                    self._seen.add(address)
                    self.refs.append(self._kept_ref(item, address))
                    self.row_ids.append(self.current.pop(address)[0])
                    continue
                self._match(item.row(self._seen), raw, new)
            else:
                self._match(item, None, new)
        ids = time_ordered_ids(len(new))
        for (position, *_), row_id in zip(new, ids, strict=True):
            self.row_ids[position] = row_id
        if not self.holds_output_value:
            rows = [stored.original for _, stored, _, _ in new]
            self.holds_output_value = holds_output_value(self._output_values, rows)
        state_id, version_id, serial = self._state_id, self._version_id, self._serial
        return [
            (
                row_id,
                state_id,
                version_id,
                serial,
                digest,
                raw,
                stored.sealed(self._ring, state_id),
                *stored.row,
            )
            for (_, stored, digest, raw), row_id in zip(new, ids, strict=True)
        ]

    def _raw_address(self, raw: bytes) -> str | None:
        """The address of the current row with raw hash `raw`, popped (see __init__)."""
        if self._by_raw is None:
            if self._unlooked > 0:
                self._unlooked -= 1
                return None
            current = self.current.items()
            self._by_raw = {raw: address for address, (_, _, raw) in current if raw}
        return self._by_raw.pop(raw, None)

    def _skip(self, skipped: SkippedResource[Remembered]) -> None:
        """Keep the rows of a resource with the same bytes as one of the current version
        (the one remembered); the version remembered is the current one, so its rows are
        current: if one is not, what was remembered is wrong, and the write is done again
        from the document whole."""
        refs, row_ids, addresses = skipped.remembered
        try:
            kept = [self.current.pop(address) for address in addresses]
        except KeyError:  # not current, or the address already read in this document
            raise NotStreamable("the rows remembered are not the current ones") from None
        if [row[0] for row in kept] != list(row_ids):
            raise NotStreamable("the rows remembered are not the current ones")
        self._seen.update(addresses)
        position = skipped.position
        if refs[0].resource_index != position:  # resources before it added or removed
            refs = tuple(ref._replace(resource_index=position) for ref in refs)
        self.refs.extend(refs)
        self.row_ids.extend(row_ids)

    def _match(
        self,
        row: InstanceRow,
        raw: bytes | None,
        new: list[_NewRow],
    ) -> None:
        remote = row.mode == "data" and row.type == REMOTE_STATE
        stored = stored_instance(row, self._linked(row) if remote else ())
        digest = stored.digest(self._ring)
        kept = self.current.pop(row.address, None)
        if kept is not None and kept[1] == digest:
            self.refs.append(self._ref(row))
            self.row_ids.append(kept[0])
            if raw is not None and kept[2] != raw:  # the next write keeps it unnormalized
                self.rehashed.append((kept[0], raw))
            return
        if kept is not None:
            self.changed += 1
            self.replaced[kept[0]] = row.address
        position = len(self.refs)
        self.refs.append(self._ref(row))
        self.row_ids.append(_PENDING)  # next_batch gives it its id
        self.new.append(position)
        if remote:  # what links read
            self.remote[position] = row
        new.append((position, stored, digest, raw))
