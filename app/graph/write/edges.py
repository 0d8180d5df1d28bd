"""A new version's dependency edges, at the grain they are declared
(app/tfstate/grain.py, migration 0030): those touching closed rows closed, the new
version's inserted (COPY), each with its `direct` flag.

A row of resource_dependencies is one of (`kind`):
- `instance`: an instance's edge to an instance;
- `resource`: an instance's edge to a resource of two instances or more, whose row ids
  are those of its `member` rows: `to_resource_id` is the resource's id (resource_id);
- `member`: a resource (`from_resource_id`, its id) to one of its instances (always
  direct: the flag is its `resource` edges').
Reads expand a `resource` edge to its members at the version read, the instance it is
from left out (app/graph/hops.py)."""

import hashlib
import itertools
from collections.abc import Iterable, Iterator
from uuid import UUID

import asyncpg

from app.graph.write.result import WrittenRows
from app.tfstate.grain import Declared, declared_edges

EDGE_BATCH = 10_000  # edge records built and copied at a time

INSTANCE, RESOURCE, MEMBER = "instance", "resource", "member"


def resource_id(config_address: str) -> UUID:
    """The id a resource's edges and members name it by: its config address hashed
    (migration 0030 computes it in SQL: md5('resource ' || address)::uuid)."""
    return UUID(hashlib.md5(f"resource {config_address}".encode()).hexdigest())


# an edge row's key (from, to), and its kind and flag
Rows = dict[tuple[UUID, UUID], tuple[str, bool]]


def edge_records(declared: Declared, row_ids: list[UUID]) -> Iterator[tuple[UUID, UUID, str, bool]]:
    """The rows of a version's declared edges, its instances' rows being `row_ids`:
    (from, to, kind, direct)."""
    ids = {key: resource_id(key) for key in declared.members}
    for a, b, flag in declared.records():
        if isinstance(b, int):
            yield row_ids[a], row_ids[b], INSTANCE, flag
        else:
            yield row_ids[a], ids[b], RESOURCE, flag
    for key, members in declared.members.items():
        for t in members:
            yield ids[key], row_ids[t], MEMBER, True


async def write_edges(conn: asyncpg.Connection, version_id: UUID, rows: WrittenRows) -> None:
    """Close the edges touching closed rows, and write the new version's.

    An edge between kept rows (or a kept row and a resource) is kept: a kept row has the
    same dependencies, and a kept target is the same instance of the same resource.

    With `rows.successors` (each closed row's new row at its address, with its
    dependencies: no instance added or removed) the edges are those closed, to and from
    the successors. Otherwise the new version's edges and flags are computed, and those
    still open compared with them: what differs is closed, or inserted.
    """
    state_id, serial, instances, row_ids = rows.state_id, rows.serial, rows.refs, rows.row_ids
    closed, successors = rows.closed, rows.successors
    if not closed and not rows.new:
        return
    closed_edges = (
        await conn.fetch(
            """UPDATE resource_dependencies SET serial_to = $2
               WHERE state_id = $1 AND serial_to IS NULL
                 AND (from_resource_id = ANY($3::uuid[]) OR to_resource_id = ANY($3::uuid[]))
               RETURNING from_resource_id, to_resource_id, kind, direct""",
            state_id,
            serial,
            list(closed),
        )
        if closed
        else []
    )
    head = (state_id, version_id, serial)
    if successors is not None:
        await _copy_edges(
            conn,
            (
                (
                    *head,
                    successors.get(r["from_resource_id"], r["from_resource_id"]),
                    successors.get(r["to_resource_id"], r["to_resource_id"]),
                    r["kind"],
                    r["direct"],
                )
                for r in closed_edges
            ),
        )
        return
    records = edge_records(declared_edges(instances), row_ids)
    if len(rows.new) == len(instances):  # no kept row: no edge is open
        await _copy_edges(conn, ((*head, *record) for record in records))
        return
    wanted: Rows = {(a, b): (kind, flag) for a, b, kind, flag in records}
    await _close_unwanted(conn, state_id, serial, wanted)
    await _copy_edges(conn, ((*head, a, b, kind, flag) for (a, b), (kind, flag) in wanted.items()))


async def _close_unwanted(
    conn: asyncpg.Connection, state_id: UUID, serial: int, wanted: Rows
) -> None:
    """Of the edges still open, those `wanted` (same ends and flag) are kept (and taken
    out of `wanted`); the others are closed."""
    unwanted: list[tuple[UUID, UUID]] = []
    for r in await conn.fetch(
        """SELECT from_resource_id, to_resource_id, kind, direct FROM resource_dependencies
           WHERE state_id = $1 AND serial_to IS NULL""",
        state_id,
    ):
        key = (r["from_resource_id"], r["to_resource_id"])
        if wanted.get(key) == (r["kind"], r["direct"]):
            del wanted[key]
        else:
            unwanted.append(key)
    if unwanted:
        await conn.execute(
            """UPDATE resource_dependencies d SET serial_to = $2
               FROM unnest($3::uuid[], $4::uuid[]) AS f (from_id, to_id)
               WHERE d.state_id = $1 AND d.serial_to IS NULL
                 AND d.from_resource_id = f.from_id AND d.to_resource_id = f.to_id""",
            state_id,
            serial,
            [f for f, _ in unwanted],
            [t for _, t in unwanted],
        )


async def _copy_edges(conn: asyncpg.Connection, records: Iterable[tuple[object, ...]]) -> None:
    """COPY the edge records, a batch at a time (a big state has hundreds of thousands)."""
    rest = iter(records)
    while batch := list(itertools.islice(rest, EDGE_BATCH)):
        await conn.copy_records_to_table(
            "resource_dependencies",
            columns=(
                "state_id",
                "state_version_id",
                "serial_from",
                "from_resource_id",
                "to_resource_id",
                "kind",
                "direct",
            ),
            records=batch,
        )
