"""A new version's dependency edges: those touching closed rows closed, those touching
new rows inserted (COPY), each with its `direct` flag, and kept edges whose flag the new
graph changes written anew."""

import itertools
from collections.abc import Iterable
from uuid import UUID

import asyncpg

from app.graph.write.result import WrittenRows
from app.tfstate.parse import resolve_edges
from app.tfstate.reduction import direct_edges, direct_flags

EDGE_BATCH = 10_000  # edge records built and copied at a time


async def write_edges(conn: asyncpg.Connection, version_id: UUID, rows: WrittenRows) -> None:
    """Close the edges touching closed rows, insert those touching new rows, with their
    `direct` flag (app/tfstate/reduction.py).

    An edge between two kept rows is kept too: a kept row has the same dependencies,
    and a kept target is the same instance of the same resource.

    With `rows.successors` (each closed row's new row at its address, with its
    dependencies: no instance added or removed) the edges are those closed, to and from
    the successors. Otherwise, directness depends only on which instances depend on
    which: when the edges a write closes and inserts join the same addresses (an
    attribute changed), each new edge takes the flag of the one it replaces. Otherwise
    the whole graph's flags are computed again, and a kept edge whose flag changed is
    closed and written anew.
    """
    state_id, serial, instances, row_ids = rows.state_id, rows.serial, rows.refs, rows.row_ids
    new_positions, closed, successors = set(rows.new), rows.closed, rows.successors
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
