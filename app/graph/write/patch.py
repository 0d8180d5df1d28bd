"""A new version that changes a few instances of the current one where they are: its
rows written from the current version's rows and the changed instances alone.

What a merged write under a lease (app/leases/) usually is: an apply updates instances
in place. Each changed instance replaces the current version's instance at its address,
in the same resource (whose own fields are unchanged), naming the same dependencies;
no output changes, and no new row holds an output's value. The version's other rows are
the current version's (the instances of the changed resources get the raw hash of their
resource as it now is), its edges are the replaced rows' between their successors, its
layout and count are the current version's, its lineage the current one less the
closed rows'. So the write reads and writes rows in proportion to the change, not to
the state: no scan of the document's other instances, none of their rows read.

When the current version's rows say otherwise (a dependency differs, an address is
not there), `write_in_place` gives None and the caller writes the version whole.
"""

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from app import crypto
from app.graph.ids import time_ordered_ids
from app.graph.sensitive import stored_instance
from app.graph.write.result import WrittenRows
from app.graph.write.rows import RESOURCE_COPY_COLUMNS
from app.jsonutil import JSON_NULL
from app.tfstate import InstanceRow, ScannedState
from app.tfstate.parse import instance_row, resource_header
from app.tfstate.remote import REMOTE_STATE, holds_output_value, output_values
from app.tfstate.scan import InstanceRef, resource_hash


@dataclass(frozen=True)
class InPlace:
    """A version changing instances of version `base` where they are (see the module)."""

    base: UUID  # the version it changes: written in place only while that is the current one
    state: ScannedState  # the new version (its instances are not read here)
    rows: list[tuple[InstanceRow, bytes]]  # the changed instances, normalized; raw hashes
    others: list[tuple[str, bytes]]  # the other instances of their resources; raw hashes


def in_place(
    state: ScannedState, base: UUID, resources: Collection[int], changed: Collection[str]
) -> InPlace | None:
    """The instances at the `changed` addresses of the document `state` scans, whose
    `resources` (positions in the document) hold them all, as version `base` changed in
    place; None when a changed one is a data source reading another state (its links are
    written whole). CPU-bound: validates and normalizes those resources' instances."""
    documents = list(_resources(state, resources))
    rows: list[tuple[InstanceRow, bytes]] = []
    others: list[tuple[str, bytes]] = []
    seen: set[str] = set()
    for index, raw in documents:
        header = resource_header(index, raw)
        digest = resource_hash(raw)
        for position, instance in enumerate(header.instances):
            row = instance_row(header, position, instance, seen)
            raw_hash = digest + position.to_bytes(4, "big")
            if row.address not in changed:
                others.append((row.address, raw_hash))
            elif row.mode == "data" and row.type == REMOTE_STATE:
                return None
            else:
                rows.append((row, raw_hash))
    if len(rows) != len(changed):
        return None
    return InPlace(base, state, rows, others)


def _resources(state: ScannedState, positions: Collection[int]) -> list[tuple[int, Any]]:
    wanted = set(positions)
    return [(n, raw) for n, raw in enumerate(state.resources()) if n in wanted]


def _names(row: InstanceRow) -> tuple[Any, Any]:
    """The dependencies a row names, JSON null as absent (as stored rows read back)."""
    return tuple(  # type: ignore[return-value]
        None if n is JSON_NULL else n for n in (row.dependencies_raw, row.depends_on_raw)
    )


async def write_in_place(
    conn: asyncpg.Connection, state_id: UUID, version_id: UUID, patch: InPlace
) -> WrittenRows | None:
    """The changed instances' rows inserted, the rows they replace closed, the other
    instances of their resources rehashed; None, having written nothing, when the
    current version's rows are not what an in-place change needs."""
    serial = patch.state.serial
    addresses = [row.address for row, _ in patch.rows] + [a for a, _ in patch.others]
    current = {
        r["address"]: r
        for r in await conn.fetch(
            """SELECT address, id, content_hash, raw_hash, dependencies_raw, depends_on_raw
               FROM resources
               WHERE state_id = $1 AND serial_to IS NULL AND address = ANY($2::text[])""",
            state_id,
            addresses,
        )
    }
    if len(current) != len(addresses):
        return None
    ring = crypto.keyring()

    def keyed(raw_hash: bytes) -> bytes:
        return ring.mac(raw_hash) if ring.encrypting else raw_hash

    new, rehashed = [], []
    for row, raw_hash in patch.rows:
        kept = current[row.address]
        if (kept["dependencies_raw"], kept["depends_on_raw"]) != _names(row):
            return None
        stored = stored_instance(row)
        digest = stored.digest(ring)
        if digest == kept["content_hash"]:  # the same content, written otherwise
            rehashed.append((kept["id"], keyed(raw_hash)))
        else:
            new.append((row, stored, digest, keyed(raw_hash), kept["id"]))
    wanted = output_values(patch.state.outputs)
    if holds_output_value(wanted, [stored.original for _, stored, _, _, _ in new]):
        return None  # the outputs' lineage is worked out whole
    rehashed += [(current[a]["id"], keyed(h)) for a, h in patch.others]
    ids = time_ordered_ids(len(new))
    if new:
        await conn.copy_records_to_table(
            "resources",
            columns=RESOURCE_COPY_COLUMNS,
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
                for (_, stored, digest, raw, _), row_id in zip(new, ids, strict=True)
            ],
        )
        await conn.execute(
            """UPDATE resources SET serial_to = $2
               WHERE state_id = $1 AND id = ANY($3::uuid[])""",
            state_id,
            serial,
            [old for *_, old in new],
        )
    stored_raw = {r["id"]: r["raw_hash"] for r in current.values()}
    rehashed = [(row_id, raw) for row_id, raw in rehashed if stored_raw[row_id] != raw]
    if rehashed:
        await conn.execute(
            """UPDATE resources r SET raw_hash = h.raw_hash
               FROM unnest($2::uuid[], $3::bytea[]) AS h (id, raw_hash)
               WHERE r.state_id = $1 AND r.id = h.id""",
            state_id,
            [row_id for row_id, _ in rehashed],
            [raw for _, raw in rehashed],
        )
    return WrittenRows(
        state_id=state_id,
        serial=serial,
        state=patch.state,
        refs=[InstanceRef.of(row) for row, *_ in new],
        row_ids=ids,
        new=list(range(len(new))),
        changed=len(new),
        closed={old: row.address for (row, *_, old) in new},
        remote={},
        holds_output_value=False,
        successors={old: row_id for (*_, old), row_id in zip(new, ids, strict=True)},
    )
