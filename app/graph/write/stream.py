"""A new version's instances diffed against the current version's rows, a batch at a
time, in a worker thread: which rows are kept, and the COPY records of the new ones."""

import itertools
from collections.abc import Callable, Iterator
from typing import Any, cast
from uuid import UUID

from app import crypto
from app.graph.ids import time_ordered_ids
from app.graph.sensitive import Path, Stored, stored_instance
from app.tfstate import InstanceRow, NormalizedState, ScannedState
from app.tfstate.parse import InstanceShape
from app.tfstate.remote import REMOTE_STATE, holds_output_value, output_values
from app.tfstate.scan import InstanceRef, ScannedInstance

# Instances matched, normalized and copied at a time: a streamed write holds a batch of
# them as parsed, and what the rest of the write needs of each (an InstanceRef); two
# batches while one is copied and the next built. 250, not 500: two 100,000-instance
# writes at once peaked 7 MiB lower, a first import's stages took no more CPU.
BATCH_INSTANCES = 250

CurrentRow = tuple[UUID, bytes, bytes | None]  # id, content hash, raw hash
# a new row: its position, the row as stored, its content hash and raw hash
_NewRow = tuple[int, Stored[InstanceRow], bytes, bytes | None]
_PENDING = UUID(int=0)  # the id of a new row until its batch is given ids


class RowStream:
    """A new version's instances against the current version's rows (by address), a
    batch at a time (CPU-bound: next_batch runs in a worker thread).

    Which instances keep the current version's row: a scanned instance whose raw hash a
    current row has (app/tfstate/scan.py) without normalizing it; any other instance,
    normalized, when its content hash (Stored.digest) is its address' row's. A raw hash
    covers the document's bytes, secrets included: with a key it is keyed (ring.mac), so a
    stored one confirms no guess."""

    def __init__(
        self,
        current: dict[str, CurrentRow],
        state: NormalizedState | ScannedState,
        ids: tuple[UUID, UUID, int],
        linked: Callable[[InstanceRow], list[Path]],
    ) -> None:
        self.current = current  # popped as kept or replaced: the rest are removed
        self._by_raw = {raw: address for address, (_, _, raw) in current.items() if raw}
        self._items: Iterator[ScannedInstance | InstanceRow] = iter(
            state.instances() if isinstance(state, ScannedState) else state.instances
        )
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

    def _ref(self, ref: InstanceShape) -> InstanceRef:
        """What the write keeps of `ref`, holding shared objects for its names and
        dependency lists (a state's refs live until its write ends; many share them).
        Built once: a first import makes one for every instance."""
        shared = self._shared
        names = [
            shared.setdefault(value, value) if type(value) is str else value
            for value in (ref.mode, ref.type, ref.name, ref.module_path)
        ]
        lists = []
        for value in (ref.dependencies_raw, ref.depends_on_raw):
            if type(value) is list:
                key = tuple(value)
                found = shared.get(key)
                if found is None:
                    found = shared[key] = [shared.setdefault(v, v) for v in value]
                value = found
            lists.append(value)
        return InstanceRef(
            ref.address,
            ref.resource_index,
            ref.instance_index,
            cast(str, names[0]),
            cast(str, names[1]),
            cast(str, names[2]),
            names[3],
            ref.index_key,
            ref.deposed,
            lists[0],
            lists[1],
        )

    def next_batch(self) -> list[tuple[object, ...]] | None:
        """The COPY records of the next batch's new rows; None after the last batch."""
        batch = list(itertools.islice(self._items, BATCH_INSTANCES))
        if not batch:
            return None
        new: list[_NewRow] = []
        for item in batch:
            if isinstance(item, ScannedInstance):
                raw = self._ring.mac(item.raw_hash) if self._ring.encrypting else item.raw_hash
                address = self._by_raw.pop(raw, None)
                # popped: of two equal instances (a duplicate address) the second is normalized
                if address is not None and address not in self._seen:
                    self._seen.add(address)
                    self.refs.append(self._ref(item.ref(address)))
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
