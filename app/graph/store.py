"""Write a state version into the graph and read it back.

A write is one transaction: the version row (raw bytes kept verbatim), then
its resources, edges and outputs bulk-loaded with COPY. Export renders the
document from those rows, never from raw_state.
"""

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast
from uuid import UUID

import asyncpg

from app import crypto
from app.errors import BadInput, Conflict, NotFound
from app.graph import links, policies
from app.graph.edges import forget_walks
from app.graph.events import append_event
from app.graph.ids import time_ordered_ids
from app.graph.queries import valid_at
from app.graph.raw import open_md5, save_raw, seal_md5
from app.graph.retention import prune_state
from app.graph.sensitive import (
    Secret,
    convention_paths,
    opened,
    pack,
    pack_form,
    restore,
    sensitive_paths,
    split,
)
from app.jsonutil import JSON_NULL, dumps, gc_paused, loads
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
from app.tfstate.order import in_document_order, layout_of
from app.tfstate.parse import InstanceShape, resolve_edges
from app.tfstate.reduction import direct_edges
from app.tfstate.remote import Server

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
                      WHERE o.state_id = v.state_id AND o.serial_to IS NULL) AS empty
           FROM state_versions v WHERE v.state_id = $1
           ORDER BY v.serial DESC LIMIT 1""",
        state_id,
    )


async def write_version(
    conn: asyncpg.Connection,
    name: str,
    body: bytes,
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
    """
    state = state or scan_state(body)
    md5 = hashlib.md5(body).digest()
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
            matched = await _match_rows(conn, state_id, state, crypto.keyring())
            version_id = await _insert_version(conn, state_id, state, matched, body, md5, actor)
            changes = await _write_rows(conn, state_id, version_id, state, matched, servers)
        if changes.outputs_changed:
            await links.record_stale(conn, state_id, state.serial, actor=actor)
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
                "resources": len(state.instances),
                "bytes": len(body),
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
    matched: "_Matched",
    body: bytes,
    md5: bytes,
    actor: str,
) -> UUID:
    version_id: UUID = await conn.fetchval(
        """INSERT INTO state_versions
               (state_id, serial, lineage, terraform_version, raw_chunks, raw_md5,
                extra, omitted, created_by, resource_count, layout, encrypted)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id""",
        state_id,
        state.serial,
        state.lineage,
        state.terraform_version,
        await save_raw(conn, state_id, body),
        seal_md5(md5, state_id),
        state.extra,
        state.omitted,
        actor,
        len(matched.refs),
        layout_of(matched.refs),
        state.encrypted,
    )
    return version_id


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


def stored_instance(row: InstanceRow) -> Stored[InstanceRow]:
    """The attributes at the paths Terraform marks sensitive, or that are secret by
    convention, are taken out: search, filters and policies never see them."""
    marked = sensitive_paths(row.sensitive_attributes)
    paths = marked + convention_paths(row.mode, row.type, row.attributes, marked)
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
class RowChanges:
    """What a write did to the rows of the current version (instances by address), and
    the ids of the rows it inserted (added or changed) and closed (removed or replaced)."""

    added: int
    changed: int
    removed: int
    inserted: list[UUID]
    closed: list[UUID]
    outputs_changed: bool

    def summary(self) -> dict[str, int]:
        return {"added": self.added, "changed": self.changed, "removed": self.removed}


@dataclass(frozen=True)
class _Matched:
    """A new version's instances against the current version's rows (by address)."""

    refs: list[InstanceShape]  # every instance in document order (its row, when normalized)
    row_ids: list[UUID | None]  # the kept row of each, None for a new one
    # position, row as stored, content hash, raw hash
    new: list[tuple[int, Stored[InstanceRow], bytes, bytes | None]]
    closed: dict[UUID, str]  # the current rows not kept (removed or replaced): their addresses
    changed: int  # of the new rows, those replacing a row at their address
    rehashed: list[tuple[UUID, bytes]]  # kept rows whose raw hash was not the instance's


async def _match_rows(
    conn: asyncpg.Connection,
    state_id: UUID,
    state: NormalizedState | ScannedState,
    ring: crypto.Keyring,
) -> _Matched:
    """Which instances keep the current version's row: a scanned instance whose raw hash a
    current row has (app/tfstate/scan.py) without normalizing it; any other instance,
    normalized, when its content hash (Stored.digest) is its address' row's.

    A raw hash covers the document's bytes, secrets included: with a key it is keyed
    (ring.mac), so a stored one confirms no guess."""
    current = {
        r["address"]: (r["id"], r["content_hash"], r["raw_hash"])
        for r in await conn.fetch(
            """SELECT address, id, content_hash, raw_hash FROM resources
               WHERE state_id = $1 AND serial_to IS NULL""",
            state_id,
        )
    }
    refs: list[InstanceShape] = []
    row_ids: list[UUID | None] = []
    new: list[tuple[int, Stored[InstanceRow], bytes, bytes | None]] = []
    rehashed: list[tuple[UUID, bytes]] = []
    changed = 0

    def match(row: InstanceRow, raw: bytes | None) -> None:
        nonlocal changed
        stored = stored_instance(row)
        digest = stored.digest(ring)
        refs.append(row)
        kept = current.pop(row.address, None)
        if kept is not None and kept[1] == digest:
            row_ids.append(kept[0])
            if raw is not None and kept[2] != raw:  # the next write keeps it unnormalized
                rehashed.append((kept[0], raw))
            return
        if kept is not None:
            changed += 1
            current[row.address] = kept  # closed below, with the removed ones
        row_ids.append(None)
        new.append((len(refs) - 1, stored, digest, raw))

    if isinstance(state, ScannedState):
        by_raw = {raw: address for address, (_, _, raw) in current.items() if raw is not None}
        # popped: of two equal instances (a duplicate address) the second is normalized
        raw_hashes = [
            ring.mac(i.raw_hash) if ring.encrypting else i.raw_hash for i in state.instances
        ]
        kept_at = {
            position: address
            for position, raw_hash in enumerate(raw_hashes)
            if (address := by_raw.pop(raw_hash, None)) is not None
        }
        seen = set(kept_at.values())  # the addresses normalized instances must not repeat
        for position, instance in enumerate(state.instances):
            address = kept_at.get(position)
            if address is None:
                match(instance.row(seen), raw_hashes[position])
            else:
                refs.append(instance.ref(address))
                row_ids.append(current.pop(address)[0])
    else:
        for row in state.instances:
            match(row, None)
    closed = {row_id: address for address, (row_id, _, _) in current.items()}
    return _Matched(refs, row_ids, new, closed, changed, rehashed)


async def _write_rows(
    conn: asyncpg.Connection,
    state_id: UUID,
    version_id: UUID,
    state: NormalizedState | ScannedState,
    matched: _Matched,
    servers: Sequence[Server],
) -> RowChanges:
    """Share the current version's unchanged rows with the new version; insert what was
    added or changed, close what was removed or replaced (serial_to = the new serial).

    An edge between two kept rows is kept too: a kept row has the same dependencies,
    and a kept target is the same instance of the same resource. So only edges from or
    to new rows are inserted, and only edges touching closed rows are closed.
    """
    serial, closed = state.serial, matched.closed
    ring = crypto.keyring()
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
    if matched.rehashed:
        await conn.execute(
            """UPDATE resources r SET raw_hash = h.raw_hash
               FROM unnest($2::uuid[], $3::bytea[]) AS h (id, raw_hash)
               WHERE r.state_id = $1 AND r.id = h.id""",
            state_id,
            [row_id for row_id, _ in matched.rehashed],
            [raw for _, raw in matched.rehashed],
        )
    new_ids = time_ordered_ids(len(matched.new))
    row_ids = list(matched.row_ids)
    for (position, *_), row_id in zip(matched.new, new_ids, strict=True):
        row_ids[position] = row_id
    if matched.new:
        await conn.copy_records_to_table(
            "resources",
            columns=_RESOURCE_COPY_COLUMNS,
            records=[
                (
                    row_id,
                    state_id,
                    version_id,
                    serial,
                    digest,
                    raw,
                    stored.sealed(ring, state_id),
                    *stored.row,
                )
                for (_, stored, digest, raw), row_id in zip(matched.new, new_ids, strict=True)
            ],
        )
    # every position holds an id now: a kept row's, else a new one (filled in just above)
    filled = cast(list[UUID], row_ids)
    new_positions = {position for position, *_ in matched.new}
    await _write_edges(
        conn,
        state_id,
        version_id,
        serial,
        matched.refs,
        filled,
        new_positions,
        closed,
        _successors(matched, closed_names, new_ids),
    )
    outputs_changed = await _write_outputs(conn, state_id, version_id, state)
    # the instances of the new rows as parsed (links read values the rows hold apart)
    new_rows = {position: stored.original for position, stored, *_ in matched.new}
    await links.write_links(conn, state_id, serial, new_rows, filled, list(closed), servers)
    await links.write_lineage(
        conn,
        state_id,
        lambda: _normalized(state),
        new_rows.values(),
        filled,
        list(closed),
        outputs_changed,
        serial=serial,
        outputs=state.outputs,
    )
    added = len(matched.new) - matched.changed
    return RowChanges(
        added,
        matched.changed,
        len(closed) - matched.changed,
        new_ids,
        list(closed),
        outputs_changed,
    )


def _normalized(state: NormalizedState | ScannedState) -> NormalizedState:
    """A scanned state with every instance normalized (a valid document's: a write
    normalized those it stored)."""
    if isinstance(state, NormalizedState):
        return state
    seen: set[str] = set()
    return NormalizedState(
        state.serial,
        state.lineage,
        state.terraform_version,
        [instance.row(seen) for instance in state.instances],
        state.outputs,
        state.extra,
        state.omitted,
    )


def _successors(
    matched: _Matched, closed_names: dict[str, tuple[Any, Any]], new_ids: list[UUID]
) -> dict[UUID, UUID] | None:
    """Each closed row's successor, when every new row replaces the closed row at its
    address and names what it named (JSON null as absent): the edges are then the same,
    between the successors. None otherwise."""
    if len(matched.new) != len(closed_names):  # an instance added or removed
        return None
    successors: dict[UUID, UUID] = {}
    row_at = {address: row_id for row_id, address in matched.closed.items()}
    for (_, stored, _, _), new_id in zip(matched.new, new_ids, strict=True):
        row = stored.row
        names = (row.dependencies_raw, row.depends_on_raw)
        if closed_names.get(row.address) != tuple(None if n is JSON_NULL else n for n in names):
            return None
        successors[row_at[row.address]] = new_id
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
    address_of = {row_id: row.address for row_id, row in zip(row_ids, instances, strict=True)}
    address_of.update(closed)
    replaced = {
        (address_of[r["from_resource_id"]], address_of[r["to_resource_id"]]): r["direct"]
        for r in closed_edges
    }
    every_row_new = len(new_positions) == len(instances)
    pairs = resolve_edges(instances, touching=None if every_row_new else new_positions)
    by_address = {(instances[a].address, instances[b].address): (a, b) for a, b in pairs}
    if not every_row_new and by_address.keys() == replaced.keys():
        for key, (a, b) in by_address.items():
            records.append((state_id, version_id, serial, row_ids[a], row_ids[b], replaced[key]))
    else:
        direct = direct_edges(len(instances), pairs if every_row_new else resolve_edges(instances))
        for a, b in pairs:
            records.append((state_id, version_id, serial, row_ids[a], row_ids[b], (a, b) in direct))
        if not every_row_new:
            records += await _flip_kept_edges(conn, state_id, version_id, serial, row_ids, direct)
    await _copy_edges(conn, records)


async def _copy_edges(conn: asyncpg.Connection, records: list[tuple[object, ...]]) -> None:
    if records:
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
            records=records,
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
    withheld: list[tuple[str, Any]] = []  # (name, value) of new rows whose value is sealed
    for row in state.outputs:
        stored = stored_output(row)
        digest = stored.digest(ring)
        if current.get(row.name) == digest:
            del current[row.name]
        else:
            if stored.taken:
                withheld.append((row.name, row.value))
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
    if withheld:
        # what a consumer read is compared with by digest (app/graph/links.py): the
        # value is sealed, so its digest is kept beside it
        await conn.execute(
            """UPDATE outputs o SET value_digest = md5(v.value::jsonb::text)
               FROM unnest($3::text[], $4::text[]) AS v (name, value)
               WHERE o.state_id = $1 AND o.serial_from = $2 AND o.serial_to IS NULL
                 AND o.name = v.name""",
            state_id,
            state.serial,
            [name for name, _ in withheld],
            [dumps(value).decode() for _, value in withheld],  # JSON text: lists stay values
        )
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
    versions: int = await conn.fetchval(
        # the count sees the snapshot from before the DELETEs in the same statement
        """WITH edges AS (DELETE FROM resource_dependencies WHERE state_id = $1),
                rows AS (DELETE FROM resources WHERE state_id = $1),
                outs AS (DELETE FROM outputs WHERE state_id = $1),
                viol AS (DELETE FROM policy_violations WHERE state_id = $1),
                gone AS (DELETE FROM states WHERE id = $1)
           SELECT count(*) FROM state_versions WHERE state_id = $1""",
        state_id,
    )
    await forget_walks(conn, state_id)
    await links.forget_links(conn, state_id)
    await append_event(
        conn, state_name=name, action="delete", actor=actor, detail={"versions": versions}
    )
    return versions
