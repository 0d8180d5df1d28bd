"""Write a state version into the graph and read it back.

A write is one transaction: the version row (raw bytes kept verbatim), then
its resources, edges and outputs bulk-loaded with COPY. Export renders the
document from those rows, never from raw_state.
"""

import asyncio
import functools
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast
from uuid import UUID

import asyncpg

from app import crypto
from app.errors import BadInput, Conflict, NotFound
from app.graph import links, policies, sealing
from app.graph.digests import write_value_digests
from app.graph.edges import forget_walks
from app.graph.events import append_event
from app.graph.ids import time_ordered_ids
from app.graph.queries import valid_at
from app.graph.raw import Body, open_md5, save_raw, seal_md5
from app.graph.retention import prune_state
from app.graph.sensitive import (
    Path,
    Secret,
    convention_paths,
    opened,
    pack,
    pack_form,
    restore,
    sensitive_paths,
    split,
)
from app.jsonutil import JSON_NULL, gc_paused, loads
from app.tfstate import (
    INSTANCE_COLUMNS,
    OUTPUT_COLUMNS,
    EncryptedState,
    InstanceRow,
    NormalizedState,
    OutputRow,
    ScannedState,
    render_state,
    scan_state,
)
from app.tfstate.digest import canonical_json, instance_digest, output_digest
from app.tfstate.order import Layout, in_document_order, layout_of
from app.tfstate.parse import InstanceShape, resolve_edges
from app.tfstate.reduction import direct_edges, direct_flags
from app.tfstate.remote import (
    REMOTE_STATE,
    Lineage,
    Server,
    holds_output_value,
    output_lineage,
    output_values,
)
from app.tfstate.scan import InstanceRef, ScannedInstance
from app.tfstate.stream import NotStreamable

_JSONB_INSTANCE = {
    "index_key",
    "attributes",
    "attributes_flat",
    "sensitive_attributes",
    "dependencies_raw",
    "depends_on_raw",
    "identity",
}
_JSONB_OUTPUT = {"value", "type"}


@dataclass(frozen=True)
class Written:
    state_id: UUID
    version_id: UUID
    serial: int
    created: bool  # False when the very same body was already stored at that serial
    # the policy violations the write opened and resolved
    violations: tuple[policies.Finding, ...] = ()


async def ensure_state(conn: asyncpg.Connection, name: str, kind: str = "terraform") -> UUID:
    """The state's id, creating its row when it has none (a first lock or write)."""
    state_id = await conn.fetchval(
        """WITH made AS (INSERT INTO states (name, kind) VALUES ($1, $2)
                         ON CONFLICT (name) DO NOTHING RETURNING id)
           SELECT id FROM made UNION ALL SELECT id FROM states WHERE name = $1 LIMIT 1""",
        name,
        kind,
    )
    # None only when another transaction made the row after this statement's snapshot
    found: UUID = state_id or await conn.fetchval("SELECT id FROM states WHERE name = $1", name)
    return found


async def current_version(conn: asyncpg.Connection, state_id: UUID) -> asyncpg.Record | None:
    return await conn.fetchrow(
        """SELECT v.id, v.serial, v.lineage, v.raw_md5,
                  NOT v.encrypted AND v.resource_count = 0 AND NOT EXISTS (
                      SELECT 1 FROM outputs o
                      WHERE o.state_id = $1 AND o.serial_to IS NULL) AS empty
           FROM state_versions v WHERE v.state_id = $1
           ORDER BY v.serial DESC LIMIT 1""",
        state_id,
    )


async def write_version(
    conn: asyncpg.Connection,
    name: str,
    body: bytes | Body,
    *,
    actor: str,
    action: str = "write",
    kind: str = "terraform",
    state: NormalizedState | ScannedState | EncryptedState | None = None,
    detail: dict[str, Any] | None = None,
    keep_last: int | None = None,
    servers: Sequence[Server] = (),
) -> Written:
    """Store `body` as the next version of state `name`; with `keep_last`, then prune
    the state to its last `keep_last` versions (app/graph/retention.py) in the same
    transaction. `servers`: the base URLs of this server, whose states the
    `terraform_remote_state` data sources of the state link to (app/graph/links.py).

    Rules Terraform relies on: serial never goes backwards; the same serial
    with a different body is refused, the very same body again is accepted
    and changes nothing (a retry after a lost response); lineage is fixed once
    set (when known), unless the current version is empty. An encrypted state
    is a version with no rows, numbered as `EncryptedState.as_version` says.

    A streamed state (app/tfstate/scan.py: scan_stream) is written as it is read; when
    the reader finds it must be read whole after all, the write is rolled back and done
    again from the whole document, which also says what is wrong with an invalid one.
    """
    raw = body if isinstance(body, Body) else Body.of(body)
    state = state or scan_state(raw.whole())
    write = functools.partial(
        _write_version,
        conn,
        name,
        raw,
        actor=actor,
        action=action,
        kind=kind,
        detail=detail,
        keep_last=keep_last,
        servers=servers,
    )
    try:
        return await write(state)
    except NotStreamable:
        return await write(await asyncio.to_thread(scan_state, raw.whole()))


async def _write_version(
    conn: asyncpg.Connection,
    name: str,
    raw: Body,
    state: NormalizedState | ScannedState | EncryptedState,
    *,
    actor: str,
    action: str,
    kind: str,
    detail: dict[str, Any] | None,
    keep_last: int | None,
    servers: Sequence[Server],
) -> Written:
    md5 = raw.md5
    async with conn.transaction():
        state_id = await ensure_state(conn, name, kind)
        # Serializes writers of one state: the checks below cannot race.
        await conn.execute("SELECT 1 FROM states WHERE id = $1 FOR UPDATE", state_id)
        current = await current_version(conn, state_id)
        current_md5 = open_md5(current["raw_md5"], state_id) if current is not None else None
        if isinstance(state, EncryptedState):
            state = state.as_version(
                current["serial"] if current else None,
                current["lineage"] if current else None,
                same_bytes=md5 == current_md5,
            )
        if current is not None:
            if state.serial == current["serial"] and md5 == current_md5:
                return Written(state_id, current["id"], state.serial, created=False)
            if current["lineage"] and state.lineage != current["lineage"] and not current["empty"]:
                raise Conflict(
                    f"lineage mismatch: state {name!r} has lineage {current['lineage']}, "
                    f"the new version has {state.lineage}",
                    {"current_lineage": current["lineage"], "lineage": state.lineage},
                )
            if state.serial <= current["serial"]:
                raise Conflict(
                    f"serial {state.serial} is not newer than the current serial "
                    f"{current['serial']} of state {name!r}",
                    {"current_serial": current["serial"], "serial": state.serial},
                )
        # Building rows allocates per instance; with the parsed state alive, each GC pass
        # would walk millions of objects that can form no cycle.
        with gc_paused():
            version_id = await _insert_version(conn, state_id, state, md5, actor)
            changes = await _write_rows(conn, state_id, version_id, state, servers)
            await _complete_version(conn, state_id, version_id, state, raw, changes.layout)
        if changes.outputs_changed:
            await links.note_sensitive_outputs(conn, state_id)
            await links.record_stale(conn, state_id, state.serial, actor=actor)
            await sealing.reseal_consumers(conn, name)
        await conn.execute(
            "UPDATE states SET lineage = nullif($2, '') WHERE id = $1", state_id, state.lineage
        )
        await append_event(
            conn,
            state_name=name,
            state_id=state_id,
            action=action,
            actor=actor,
            serial=state.serial,
            detail={
                "resources": changes.instances,
                "bytes": raw.size,
                **changes.summary(),
                **({"encrypted": True} if state.encrypted else {}),
                **(detail or {}),
            },
        )
        found = await policies.check_write(
            conn,
            state_id,
            name,
            state.serial,
            inserted=changes.inserted,
            closed=changes.closed,
            actor=actor,
        )
        # Inside the write's transaction: under the lock it already holds, and no reader
        # ever sees more than keep_last versions (INFRAGRAPH_PRUNE_KEEP_LAST).
        await prune_state(conn, state_id, name, keep_last, actor=actor)
    return Written(state_id, version_id, state.serial, created=True, violations=tuple(found))


async def _insert_version(
    conn: asyncpg.Connection,
    state_id: UUID,
    state: NormalizedState | ScannedState,
    md5: bytes,
    actor: str,
) -> UUID:
    """The version row, before its rows (they refer to it); its raw bytes, layout and
    count are known after them (_complete_version)."""
    version_id: UUID = await conn.fetchval(
        """INSERT INTO state_versions
               (state_id, serial, lineage, raw_chunks, raw_md5, created_by, encrypted)
           VALUES ($1, $2, $3, '{}', $4, $5, $6) RETURNING id""",
        state_id,
        state.serial,
        state.lineage,
        seal_md5(md5, state_id),
        actor,
        state.encrypted,
    )
    return version_id


async def _complete_version(
    conn: asyncpg.Connection,
    state_id: UUID,
    version_id: UUID,
    state: NormalizedState | ScannedState,
    raw: Body,
    layout: "VersionLayout",
) -> None:
    """The version row's raw bytes, layout and count, and the document's fields: a
    streamed document's are complete once its resources were read."""
    await conn.execute(
        """UPDATE state_versions
           SET raw_chunks = $2, terraform_version = $3, extra = $4, omitted = $5,
               resource_count = $6, layout = $7
           WHERE state_id = $8 AND id = $1""",
        version_id,
        await save_raw(conn, state_id, raw),
        state.terraform_version,
        state.extra,
        state.omitted,
        layout.count,
        layout.order,
        state_id,
    )


Row = TypeVar("Row", InstanceRow, OutputRow)


@dataclass(frozen=True)
class Stored(Generic[Row]):
    """A row as stored: the secrets taken out of `original` (app/graph/sensitive.py),
    `taken`, to be stored apart, sealed under the keyring's key.

    Its content hash is the original row's as before when it holds no secret, or when
    there is no key (then everything is in clear anyway); with a key, the hash of the
    stored row and of the keyed hash of its secrets, so a stored hash confirms no guess."""

    original: Row
    row: Row
    hash_of: Callable[[Row, bytes | None], bytes]
    taken: list[Secret] = field(default_factory=list)

    def keyed_digest(self, ring: crypto.Keyring) -> bytes | None:
        """The content hash when it is keyed; None when it is the original row's."""
        if not self.taken or not ring.encrypting:
            return None
        return self.hash_of(self.row, ring.mac(canonical_json(pack_form(self.taken))))

    def digest(self, ring: crypto.Keyring) -> bytes:
        return self.keyed_digest(ring) or self.hash_of(self.original, None)

    def sealed(self, ring: crypto.Keyring, state_id: UUID) -> bytes | None:
        return ring.seal(pack(self.taken), state_id.bytes) if self.taken else None


def stored_instance(row: InstanceRow, also: Sequence[Path] = ()) -> Stored[InstanceRow]:
    """The attributes at the paths Terraform marks sensitive, secret by convention, or
    `also` (app/graph/sealing.py) are taken out: search, filters and policies never see them."""
    marked = sensitive_paths(row.sensitive_attributes)
    paths = [*marked, *convention_paths(row.mode, row.type, row.attributes, marked), *also]
    if not paths:
        return Stored(row, row, instance_digest)
    attributes, secrets = split(row.attributes, paths)
    if not secrets:
        return Stored(row, row, instance_digest)
    masked = row._replace(attributes=JSON_NULL if attributes is None else attributes)
    return Stored(row, masked, instance_digest, secrets)


def stored_output(row: OutputRow) -> Stored[OutputRow]:
    """A sensitive output's value is taken out whole."""
    if not row.sensitive or row.value is None or row.value is JSON_NULL:
        return Stored(row, row, output_digest)
    return Stored(row, row._replace(value=JSON_NULL), output_digest, [((), row.value)])


@dataclass(frozen=True)
class VersionLayout:
    """How many instances a version has, and their order when not Terraform's
    (app/tfstate/order.py)."""

    count: int
    order: Layout | None


@dataclass(frozen=True)
class RowChanges:
    """What a write did to the rows of the current version (instances by address), and
    the ids of the rows it inserted (added or changed) and closed (removed or replaced)."""

    added: int
    changed: int
    removed: int
    inserted: list[UUID]
    closed: list[UUID]
    outputs_changed: bool
    layout: VersionLayout

    @property
    def instances(self) -> int:
        return self.layout.count

    def summary(self) -> dict[str, int]:
        return {"added": self.added, "changed": self.changed, "removed": self.removed}


# Instances matched, normalized and copied at a time: a streamed write holds a batch of
# them as parsed, and what the rest of the write needs of each (an InstanceRef).
BATCH_INSTANCES = 500

_CurrentRow = tuple[UUID, bytes, bytes | None]  # id, content hash, raw hash
# a new row: its position, the row as stored, its content hash and raw hash
_NewRow = tuple[int, Stored[InstanceRow], bytes, bytes | None]
_PENDING = UUID(int=0)  # the id of a new row until its batch is given ids


class _RowStream:
    """A new version's instances against the current version's rows (by address), a
    batch at a time (CPU-bound: next_batch runs in a worker thread).

    Which instances keep the current version's row: a scanned instance whose raw hash a
    current row has (app/tfstate/scan.py) without normalizing it; any other instance,
    normalized, when its content hash (Stored.digest) is its address' row's. A raw hash
    covers the document's bytes, secrets included: with a key it is keyed (ring.mac), so a
    stored one confirms no guess."""

    def __init__(
        self,
        current: dict[str, _CurrentRow],
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

    def _ref(self, ref: InstanceRef) -> InstanceRef:
        """`ref` holding shared objects: a state's refs live until its write ends."""
        shared = self._shared
        names = [
            shared.setdefault(value, value) if type(value) is str else value
            for value in (ref.mode, ref.type, ref.name, ref.module_path)
        ]
        lists = [
            shared.setdefault(tuple(value), [shared.setdefault(v, v) for v in value])
            if type(value) is list
            else value
            for value in (ref.dependencies_raw, ref.depends_on_raw)
        ]
        return ref._replace(
            mode=cast(str, names[0]),
            type=cast(str, names[1]),
            name=cast(str, names[2]),
            module_path=names[3],
            dependencies_raw=lists[0],
            depends_on_raw=lists[1],
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
            self.refs.append(self._ref(InstanceRef.of(row)))
            self.row_ids.append(kept[0])
            if raw is not None and kept[2] != raw:  # the next write keeps it unnormalized
                self.rehashed.append((kept[0], raw))
            return
        if kept is not None:
            self.changed += 1
            self.replaced[kept[0]] = row.address
        position = len(self.refs)
        self.refs.append(self._ref(InstanceRef.of(row)))
        self.row_ids.append(_PENDING)  # next_batch gives it its id
        self.new.append(position)
        if remote:  # what links read
            self.remote[position] = row
        new.append((position, stored, digest, raw))


async def _write_rows(
    conn: asyncpg.Connection,
    state_id: UUID,
    version_id: UUID,
    state: NormalizedState | ScannedState,
    servers: Sequence[Server],
) -> RowChanges:
    """Share the current version's unchanged rows with the new version; insert what was
    added or changed, a batch at a time, then close what was removed or replaced
    (serial_to = the new serial).

    An edge between two kept rows is kept too: a kept row has the same dependencies,
    and a kept target is the same instance of the same resource. So only edges from or
    to new rows are inserted, and only edges touching closed rows are closed.
    """
    serial = state.serial
    current = {
        r["address"]: (r["id"], r["content_hash"], r["raw_hash"])
        for r in await conn.fetch(
            """SELECT address, id, content_hash, raw_hash FROM resources
               WHERE state_id = $1 AND serial_to IS NULL""",
            state_id,
        )
    }
    linked = sealing.LinkedSensitive(conn, servers, asyncio.get_running_loop())
    rows = _RowStream(current, state, (state_id, version_id, serial), linked.paths)
    while (records := await asyncio.to_thread(rows.next_batch)) is not None:
        if records:
            await conn.copy_records_to_table(
                "resources", columns=_RESOURCE_COPY_COLUMNS, records=records
            )
    closed = {**rows.replaced, **{row_id: address for address, (row_id, _, _) in current.items()}}
    # the dependencies each closed row had, by address (JSON null and absent: None)
    closed_names = (
        {
            closed[r["id"]]: (r["dependencies_raw"], r["depends_on_raw"])
            for r in await conn.fetch(
                """UPDATE resources SET serial_to = $2
                   WHERE state_id = $1 AND id = ANY($3::uuid[])
                   RETURNING id, dependencies_raw, depends_on_raw""",
                state_id,
                serial,
                list(closed),
            )
        }
        if closed
        else {}
    )
    if rows.rehashed:
        await conn.execute(
            """UPDATE resources r SET raw_hash = h.raw_hash
               FROM unnest($2::uuid[], $3::bytea[]) AS h (id, raw_hash)
               WHERE r.state_id = $1 AND r.id = h.id""",
            state_id,
            [row_id for row_id, _ in rows.rehashed],
            [raw for _, raw in rows.rehashed],
        )
    await _write_edges(
        conn,
        state_id,
        version_id,
        serial,
        rows.refs,
        rows.row_ids,
        set(rows.new),
        closed,
        _successors(rows, closed, closed_names),
    )
    outputs_changed = await _write_outputs(conn, state_id, version_id, state)
    await links.write_links(
        conn, state_id, serial, rows.remote, rows.row_ids, list(closed), servers
    )
    await links.write_lineage(
        conn,
        state_id,
        functools.partial(_lineage, state, rows.refs),
        rows.holds_output_value,
        rows.row_ids,
        list(closed),
        outputs_changed,
        serial=serial,
    )
    return RowChanges(
        len(rows.new) - rows.changed,
        rows.changed,
        len(closed) - rows.changed,
        [rows.row_ids[position] for position in rows.new],
        list(closed),
        outputs_changed,
        VersionLayout(len(rows.refs), layout_of(rows.refs)),
    )


def _lineage(state: NormalizedState | ScannedState, refs: list[InstanceShape]) -> set[Lineage]:
    """The lineage of the state's outputs over all its instances (a streamed document is
    read once more: a write keeps rows without normalizing, or holding, them)."""
    attributes = (
        (instance.raw.get("attributes") for instance in state.instances())
        if isinstance(state, ScannedState)
        else (row.attributes for row in state.instances)
    )
    return output_lineage(state.outputs, attributes, lambda: resolve_edges(refs))


def _successors(
    rows: _RowStream, closed: dict[UUID, str], closed_names: dict[str, tuple[Any, Any]]
) -> dict[UUID, UUID] | None:
    """Each closed row's successor, when every new row replaces the closed row at its
    address and names what it named (JSON null as absent): the edges are then the same,
    between the successors. None otherwise."""
    if len(rows.new) != len(closed_names):  # an instance added or removed
        return None
    successors: dict[UUID, UUID] = {}
    row_at = {address: row_id for row_id, address in closed.items()}
    for position in rows.new:
        ref = rows.refs[position]
        names = (ref.dependencies_raw, ref.depends_on_raw)
        if closed_names.get(ref.address) != tuple(None if n is JSON_NULL else n for n in names):
            return None
        successors[row_at[ref.address]] = rows.row_ids[position]
    return successors


async def _write_edges(
    conn: asyncpg.Connection,
    state_id: UUID,
    version_id: UUID,
    serial: int,
    instances: Sequence[InstanceShape],
    row_ids: list[UUID],
    new_positions: set[int],
    closed: dict[UUID, str],
    successors: dict[UUID, UUID] | None,
) -> None:
    """Close the edges touching closed rows, insert those touching new rows, with their
    `direct` flag (app/tfstate/reduction.py).

    With `successors` (each closed row's new row at its address, with its dependencies:
    no instance added or removed) the edges are those closed, to and from the successors.
    Otherwise, directness depends only on which instances depend on which: when the
    edges a write closes and inserts join the same addresses (an attribute changed),
    each new edge takes the flag of the one it replaces. Otherwise the whole graph's
    flags are computed again, and a kept edge whose flag changed is closed and written
    anew.
    """
    if not closed and not new_positions:
        return
    closed_edges = (
        await conn.fetch(
            """UPDATE resource_dependencies SET serial_to = $2
               WHERE state_id = $1 AND serial_to IS NULL
                 AND (from_resource_id = ANY($3::uuid[]) OR to_resource_id = ANY($3::uuid[]))
               RETURNING from_resource_id, to_resource_id, direct""",
            state_id,
            serial,
            list(closed),
        )
        if closed
        else []
    )
    records: list[tuple[object, ...]] = []
    if successors is not None:
        for r in closed_edges:
            ends = (r["from_resource_id"], r["to_resource_id"])
            from_id, to_id = (successors.get(end, end) for end in ends)
            records.append((state_id, version_id, serial, from_id, to_id, r["direct"]))
        await _copy_edges(conn, records)
        return
    every_row_new = len(new_positions) == len(instances)
    pairs = resolve_edges(instances, touching=None if every_row_new else new_positions)
    if not every_row_new:
        address_of = dict(zip(row_ids, (row.address for row in instances), strict=True))
        address_of.update(closed)
        replaced = {
            (address_of[r["from_resource_id"]], address_of[r["to_resource_id"]]): r["direct"]
            for r in closed_edges
        }
        by_address = {(instances[a].address, instances[b].address): (a, b) for a, b in pairs}
        if by_address.keys() == replaced.keys():
            for key, (a, b) in by_address.items():
                records.append(
                    (state_id, version_id, serial, row_ids[a], row_ids[b], replaced[key])
                )
            await _copy_edges(conn, records)
            return
    if every_row_new:
        flags = direct_flags(len(instances), pairs)
        await _copy_edges(
            conn,
            (
                (state_id, version_id, serial, row_ids[a], row_ids[b], flag)
                for (a, b), flag in zip(pairs, flags, strict=True)
            ),
        )
        return
    direct = direct_edges(len(instances), resolve_edges(instances))
    records += await _flip_kept_edges(conn, state_id, version_id, serial, row_ids, direct)
    await _copy_edges(
        conn,
        records,
        (
            (state_id, version_id, serial, row_ids[a], row_ids[b], (a, b) in direct)
            for a, b in pairs
        ),
    )


EDGE_BATCH = 10_000  # edge records built and copied at a time


async def _copy_edges(conn: asyncpg.Connection, *records: Iterable[tuple[object, ...]]) -> None:
    """COPY the edge records, a batch at a time (a big state has hundreds of thousands)."""
    rest = itertools.chain(*records)
    while batch := list(itertools.islice(rest, EDGE_BATCH)):
        await conn.copy_records_to_table(
            "resource_dependencies",
            columns=(
                "state_id",
                "state_version_id",
                "serial_from",
                "from_resource_id",
                "to_resource_id",
                "direct",
            ),
            records=batch,
        )


async def _flip_kept_edges(
    conn: asyncpg.Connection,
    state_id: UUID,
    version_id: UUID,
    serial: int,
    row_ids: list[UUID],
    direct: set[tuple[int, int]],
) -> list[tuple[object, ...]]:
    """Close the still-open edges whose `direct` flag the new graph changes; the records
    of their successors."""
    position_of = {row_id: position for position, row_id in enumerate(row_ids)}
    flipped = [
        (r["from_resource_id"], r["to_resource_id"], not r["direct"])
        for r in await conn.fetch(
            """SELECT from_resource_id, to_resource_id, direct FROM resource_dependencies
               WHERE state_id = $1 AND serial_to IS NULL""",
            state_id,
        )
        if ((position_of[r["from_resource_id"]], position_of[r["to_resource_id"]]) in direct)
        != r["direct"]
    ]
    if flipped:
        await conn.execute(
            """UPDATE resource_dependencies d SET serial_to = $2
               FROM unnest($3::uuid[], $4::uuid[]) AS f (from_id, to_id)
               WHERE d.state_id = $1 AND d.serial_to IS NULL
                 AND d.from_resource_id = f.from_id AND d.to_resource_id = f.to_id""",
            state_id,
            serial,
            [f for f, _, _ in flipped],
            [t for _, t, _ in flipped],
        )
    return [(state_id, version_id, serial, f, t, flag) for f, t, flag in flipped]


_RESOURCE_COPY_COLUMNS = (
    "id",
    "state_id",
    "state_version_id",
    "serial_from",
    "content_hash",
    "raw_hash",
    "secrets",
    *INSTANCE_COLUMNS,
)


async def _write_outputs(
    conn: asyncpg.Connection,
    state_id: UUID,
    version_id: UUID,
    state: NormalizedState | ScannedState,
) -> bool:
    """Outputs follow versions like instances do (by name, their position included).
    True when any was added, changed or removed."""
    current = {
        r["name"]: r["content_hash"]
        for r in await conn.fetch(
            "SELECT name, content_hash FROM outputs WHERE state_id = $1 AND serial_to IS NULL",
            state_id,
        )
    }
    ring = crypto.keyring()
    new = []
    added: list[tuple[str, Any]] = []  # (name, value) of new rows
    for row in state.outputs:
        stored = stored_output(row)
        digest = stored.digest(ring)
        if current.get(row.name) == digest:
            del current[row.name]
        else:
            added.append((row.name, row.value))
            new.append(
                (
                    state_id,
                    version_id,
                    state.serial,
                    digest,
                    stored.sealed(ring, state_id),
                    *stored.row,
                )
            )
    replaced = list(current)  # removed, or changed (a new row follows)
    if replaced:
        await conn.execute(
            """UPDATE outputs SET serial_to = $2
               WHERE state_id = $1 AND serial_to IS NULL AND name = ANY($3::text[])""",
            state_id,
            state.serial,
            replaced,
        )
    if new:
        await conn.copy_records_to_table(
            "outputs",
            columns=(
                "state_id",
                "state_version_id",
                "serial_from",
                "content_hash",
                "secrets",
                *OUTPUT_COLUMNS,
            ),
            records=new,
        )
    if new:
        # what a consumer read is compared with (app/graph/links.py), for every new row
        await write_value_digests(conn, state_id, state.serial, added)
    return bool(new or replaced)


def _select_list(columns: tuple[str, ...], jsonb: set[str]) -> str:
    # JSONB read as text so a JSON null ('null') stays apart from an absent key (SQL NULL)
    return ", ".join(f"{c}::text AS {c}" if c in jsonb else c for c in columns)


def _from_text(record: asyncpg.Record, columns: tuple[str, ...], jsonb: set[str]) -> list[Any]:
    values = []
    for column in columns:
        value = record[column]
        if column in jsonb and value is not None:
            value = JSON_NULL if value == "null" else loads(value)
        values.append(value)
    return values


async def find_version(
    conn: asyncpg.Connection, name: str, serial: int | None = None
) -> asyncpg.Record:
    """The version row of state `name` at `serial` (default: current); NotFound otherwise."""
    record = await conn.fetchrow(
        """SELECT v.id, v.state_id, v.serial, v.lineage, v.terraform_version, v.extra,
                  v.omitted, v.layout, v.encrypted
           FROM states s JOIN state_versions v ON v.state_id = s.id
           WHERE s.name = $1 AND ($2::bigint IS NULL OR v.serial = $2)
           ORDER BY v.serial DESC LIMIT 1""",
        name,
        serial,
    )
    if record is None:
        what = f"state {name!r}" + (f" at serial {serial}" if serial is not None else "")
        raise NotFound(f"no {what}")
    return record


# A row's columns as select lists: read back with instance_of and output_of.
INSTANCE_SELECT = f"{_select_list(INSTANCE_COLUMNS, _JSONB_INSTANCE)}, secrets"
OUTPUT_SELECT = f"{_select_list(OUTPUT_COLUMNS, _JSONB_OUTPUT)}, secrets"


def instance_of(record: asyncpg.Record, state_id: UUID) -> InstanceRow:
    """The instance row as written (its secrets put back) from INSTANCE_SELECT."""
    row = InstanceRow(*_from_text(record, INSTANCE_COLUMNS, _JSONB_INSTANCE))
    if not record["secrets"]:
        return row
    return row._replace(attributes=restore(row.attributes, opened(record["secrets"], state_id)))


def output_of(record: asyncpg.Record, state_id: UUID) -> OutputRow:
    """The output row as written from OUTPUT_SELECT."""
    row = OutputRow(*_from_text(record, OUTPUT_COLUMNS, _JSONB_OUTPUT))
    if not record["secrets"]:
        return row
    return row._replace(value=restore(row.value, opened(record["secrets"], state_id)))


async def render_version(conn: asyncpg.Connection, version: asyncpg.Record) -> dict[str, Any]:
    """The state document of `version`, rendered from its normalized rows."""
    state_id = version["state_id"]
    instance_rows = await conn.fetch(
        f"SELECT {INSTANCE_SELECT} FROM resources r WHERE {valid_at('r')}",
        state_id,
        version["serial"],
    )
    output_rows = await conn.fetch(
        f"SELECT {OUTPUT_SELECT} FROM outputs o WHERE {valid_at('o')} ORDER BY position",
        state_id,
        version["serial"],
    )
    instances = (instance_of(r, state_id) for r in instance_rows)
    outputs = [output_of(r, state_id) for r in output_rows]
    return render_state(
        serial=version["serial"],
        lineage=version["lineage"],
        terraform_version=version["terraform_version"],
        instances=in_document_order(instances, version["layout"]),
        outputs=outputs,
        extra=version["extra"],
        omitted=version["omitted"],
    )


async def export_state(
    conn: asyncpg.Connection, name: str, *, serial: int | None = None, actor: str
) -> dict[str, Any]:
    """Render state `name` (current or at `serial`) from its rows and record the export."""
    version = await find_version(conn, name, serial)
    if version["encrypted"]:
        raise BadInput(
            f"state {name!r} at serial {version['serial']} is encrypted by OpenTofu: the server "
            "cannot read it, only serve its bytes through the HTTP backend"
        )
    document = await render_version(conn, version)
    await append_event(
        conn,
        state_name=name,
        state_id=version["state_id"],
        action="export",
        actor=actor,
        serial=version["serial"],
    )
    return document


async def delete_state(conn: asyncpg.Connection, state_id: UUID, name: str, *, actor: str) -> int:
    """Delete a state and its history; its events stay, by name. Returns how many
    versions went. The graph rows have no foreign keys (see migration 0005): they go
    by state_id, then the state (its versions and lock cascade), and its kept walks."""
    # counted first: Citus runs the DELETEs of a statement before its SELECT
    versions: int = await conn.fetchval(
        "SELECT count(*) FROM state_versions WHERE state_id = $1", state_id
    )
    await conn.execute(
        """WITH edges AS (DELETE FROM resource_dependencies WHERE state_id = $1),
                rows AS (DELETE FROM resources WHERE state_id = $1),
                outs AS (DELETE FROM outputs WHERE state_id = $1)
           DELETE FROM policy_violations WHERE state_id = $1""",
        state_id,
    )
    # then the state (a reference table on Citus: a statement of its own)
    await conn.execute("DELETE FROM states WHERE id = $1", state_id)
    await forget_walks(conn, state_id)
    await links.forget_links(conn, state_id)
    await append_event(
        conn, state_name=name, action="delete", actor=actor, detail={"versions": versions}
    )
    return versions
