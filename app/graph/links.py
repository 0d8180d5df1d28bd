"""One graph across states (migration 0015): links from consumers' `terraform_remote_state`
data sources to producer states, output lineage, and who reads whom (README, "Across
states").

A link's producer is a state name: it is linked whenever a state of that name exists.
Reads of links go through one function, `read_links`, given the states to read (as
consumers or producers): the one place a read filter applies (`readable`, a caller's
patterns, app.access: a link is read only when both its states may be).
"""

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Literal
from uuid import UUID

import asyncpg

from app.graph.digests import digest_args, digest_sql
from app.graph.events import STALE, append_event
from app.graph.write.result import WrittenRows
from app.tfstate import NormalizedState, ScannedState
from app.tfstate.parse import InstanceShape, resolve_edges
from app.tfstate.remote import Lineage, Server, output_lineage, remote_reads

# A terraform_remote_state data source read here stores the outputs it read in its
# `outputs` attribute ({"value": {name: value}, "type": ...}): those sensitive in the
# producer (in any version it keeps) are withheld as if Terraform had marked them. Their
# paths, in Terraform's step format, for both shapes of the attribute. Built as text of
# scalar expressions (no VALUES or set-returning function: Citus pushes the subquery down
# to each shard only without them); `{state}`: the row's state id (a parameter pins the
# subquery to one shard of a cluster).
_STEP = "jsonb_build_object('type', 'get_attr', 'value', {})::text"
_LINKED_SENSITIVE = f"""(
    SELECT coalesce(('[' || string_agg(
        '[' || {_STEP.format("'outputs'")} || ',' || {_STEP.format("'value'")} || ','
            || {_STEP.format("o.name")} || '],'
        || '[' || {_STEP.format("'outputs'")} || ',' || {_STEP.format("o.name")} || ']',
        ',') || ']')::jsonb, '[]'::jsonb)
    FROM state_links l
    JOIN states ps ON ps.name = l.producer_name
    JOIN sensitive_outputs o ON o.state_id = ps.id AND l.outputs ? o.name
    WHERE l.state_id = {{state}} AND l.resource_id = {{r}}.id)"""


def sensitive_attributes(r: str, state: str | None = None) -> str:
    """SQL: the `sensitive_attributes` of resources row `r` as readers see them: Terraform's,
    and a linked data source's outputs sensitive in their producer (_LINKED_SENSITIVE).
    `state`: the row's state id where the statement names it (else `r`'s)."""
    linked = _LINKED_SENSITIVE.format(r=r, state=state or f"{r}.state_id")
    return f"""CASE WHEN {r}.type = 'terraform_remote_state' THEN coalesce(nullif(
        coalesce({r}.sensitive_attributes, '[]'::jsonb) || {linked}, '[]'::jsonb),
        {r}.sensitive_attributes) ELSE {r}.sensitive_attributes END"""


def hides_linked_outputs(r: str) -> str:
    """SQL: row `r` is a data source whose read outputs include one sensitive in its
    producer (an attribute search on `outputs` never matches it)."""
    linked = _LINKED_SENSITIVE.format(r=r, state=f"{r}.state_id")
    return f"({r}.type = 'terraform_remote_state' AND {linked} <> '[]')"


async def note_sensitive_outputs(conn: asyncpg.Connection, state_id: UUID) -> None:
    """Keeps `sensitive_outputs` (migration 0027) for a state whose outputs were written or
    pruned: the names sensitive in a version it keeps. Written only when they differ (on
    Citus a reference table: a write there reaches every node)."""
    names = await conn.fetchval(
        """SELECT coalesce(array_agg(DISTINCT name), '{}') FROM outputs
           WHERE state_id = $1 AND sensitive""",
        state_id,
    )
    known = await conn.fetchval(
        "SELECT coalesce(array_agg(name), '{}') FROM sensitive_outputs WHERE state_id = $1",
        state_id,
    )
    if set(names) == set(known):
        return
    await conn.execute(
        "DELETE FROM sensitive_outputs WHERE state_id = $1 AND NOT name = ANY($2::text[])",
        state_id,
        names,
    )
    await conn.execute(
        """INSERT INTO sensitive_outputs (state_id, name) SELECT $1, unnest($2::text[])
           ON CONFLICT DO NOTHING""",
        state_id,
        sorted(set(names) - set(known)),
    )


async def _close(
    conn: asyncpg.Connection,
    table: Literal["state_links", "output_lineage"],
    state_id: UUID,
    serial: int,
    closed: Sequence[UUID],
) -> None:
    """End at `serial` the open rows of `table` that belong to the closed resource rows."""
    if closed:
        await conn.execute(
            f"""UPDATE {table} SET serial_to = $2
                WHERE state_id = $1 AND serial_to IS NULL AND resource_id = ANY($3::uuid[])""",
            state_id,
            serial,
            list(closed),
        )


async def write_links(
    conn: asyncpg.Connection, rows: WrittenRows, servers: Sequence[Server]
) -> None:
    """A link lives as long as its data source's row: closed with it, written with it
    (`rows.remote`: the data sources of the rows the write inserted, by position)."""
    state_id, serial, new_rows, row_ids = rows.state_id, rows.serial, rows.remote, rows.row_ids
    await _close(conn, "state_links", state_id, serial, list(rows.closed))
    positions = sorted(new_rows)
    reads = remote_reads([new_rows[p] for p in positions], servers)
    if reads:
        # each output read by the (keyed) digest of its value: the values stay in the data
        # source's row (app/graph/digests.py)
        await conn.execute(
            f"""INSERT INTO state_links
                   (state_id, resource_id, serial_from, address, producer_name, outputs)
               SELECT $1, n.resource_id, $2, n.address, n.producer,
                      (SELECT coalesce(jsonb_object_agg(o.key, {digest_sql("o.value::text", 7)}),
                                       '{{}}')
                       FROM jsonb_each(n.outputs) AS o)
               FROM unnest($3::uuid[], $4::text[], $5::text[], $6::jsonb[])
                   AS n (resource_id, address, producer, outputs)""",
            state_id,
            serial,
            [row_ids[positions[read.position]] for read in reads],
            [new_rows[positions[read.position]].address for read in reads],
            [read.producer for read in reads],
            [read.outputs for read in reads],
            *digest_args(),
        )


async def write_lineage(conn: asyncpg.Connection, rows: WrittenRows, outputs_changed: bool) -> None:
    """The lineage of the new version's outputs, written as the rows that differ from the
    current ones. With the same outputs and no new row holding one of their values, it is
    the current lineage less the closed instances'; else it is computed whole
    (`_lineage`, CPU-bound: in a worker thread)."""
    state_id, serial, row_ids = rows.state_id, rows.serial, rows.row_ids
    if not outputs_changed and not rows.holds_output_value:
        await _close(conn, "output_lineage", state_id, serial, list(rows.closed))
        return
    found = {
        (item.output, row_ids[item.position], item.path)
        for item in await asyncio.to_thread(_lineage, rows.state, rows.refs)
    }
    current = {
        (r["output_name"], r["resource_id"], tuple(r["path"]))
        for r in await conn.fetch(
            """SELECT output_name, resource_id, path FROM output_lineage
               WHERE state_id = $1 AND serial_to IS NULL""",
            state_id,
        )
    }
    gone = current - found
    if gone:
        await conn.execute(
            """UPDATE output_lineage l SET serial_to = $2
               FROM unnest($3::text[], $4::uuid[], $5::text[]) AS g (name, resource_id, path)
               WHERE l.state_id = $1 AND l.serial_to IS NULL AND l.output_name = g.name
                 AND l.resource_id = g.resource_id
                 AND l.path = string_to_array(g.path, E'\\x01')""",
            state_id,
            serial,
            [o for o, _, _ in gone],
            [r for _, r, _ in gone],
            ["\x01".join(p) for _, _, p in gone],
        )
    if found - current:
        await conn.copy_records_to_table(
            "output_lineage",
            columns=("state_id", "serial_from", "output_name", "resource_id", "path"),
            records=[(state_id, serial, o, r, list(p)) for o, r, p in found - current],
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


# A link joins rows of two states (two shards on Citus), so it is read in steps, each on
# the rows of one side: the consumers' links with the outputs their data source read
# (`_LINKED`), the producers (`_PRODUCERS`), the producers' outputs (`_PRODUCED`: those
# read, every stored version's, the value of the current one only); then each output read
# is compared with the producer's (`_compare`).
_LINKED = """
    SELECT c.id AS consumer_id, c.name AS consumer_name, c.kind AS consumer_kind,
           c.lineage AS consumer_lineage, c.created_at AS consumer_created_at,
           l.producer_name, l.address, l.resource_id, l.outputs AS digests,
           CASE WHEN (r.attributes -> 'outputs') ?& ARRAY['value', 'type']
                     AND (r.attributes -> 'outputs') - 'value' - 'type' = '{}'::jsonb
                THEN r.attributes -> 'outputs' -> 'value'
                ELSE r.attributes -> 'outputs' END AS outputs
    FROM states c
    JOIN state_links l ON l.state_id = c.id AND l.serial_to IS NULL
    JOIN resources r ON r.state_id = l.state_id AND r.id = l.resource_id
    WHERE ($1::uuid[] IS NULL OR c.id = ANY($1::uuid[]))
      AND ($2::text[] IS NULL OR l.producer_name = ANY($2::text[]))
      AND may_read(c.name, $3::text[])"""
_PRODUCERS = """
    SELECT p.id AS producer_id, p.name AS producer_name, p.kind AS producer_kind,
           p.lineage AS producer_lineage, p.created_at AS producer_created_at
    FROM states p
    WHERE ($1::uuid[] IS NULL OR p.id = ANY($1::uuid[]))
      AND ($2::text[] IS NULL OR p.name = ANY($2::text[])) AND may_read(p.name, $3::text[])"""
_PRODUCED = """
    SELECT o.state_id, o.name, CASE WHEN o.serial_to IS NULL THEN o.value END AS value,
           coalesce(o.sensitive, false) AS sensitive, o.serial_from, o.serial_to,
           coalesce(o.value_digest, md5(o.value::text)) AS digest
    FROM states p JOIN outputs o ON o.state_id = p.id
    WHERE p.id = ANY($1::uuid[]) AND o.state_id = ANY($1::uuid[])  -- the shards named
      AND o.name = ANY($2::text[])"""


_NO_STATE = UUID(int=0)


def _compare(
    digests: Mapping[str, str], read: Any, produced: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The outputs a link read (`digests`: name -> digest of the value read; `read`: the
    values) against the producer's rows (`produced`, every stored version's): each with
    its value read and its current value, null when sensitive in any stored version;
    `changed` when the digests differ (a missing output has changed); `since`, the
    producer serial at which the value stopped being the one read."""
    outputs = []
    for name in sorted(digests):
        digest = digests[name]
        rows = [o for o in produced if o["name"] == name]
        current = next((o for o in rows if o["serial_to"] is None), None)
        sensitive = any(o["sensitive"] for o in rows)
        changed = current is None or current["digest"] != digest
        since = None
        if changed:
            ended = [o["serial_to"] for o in rows if o["serial_to"] is not None]
            same = [
                o["serial_to"] for o in rows if o["serial_to"] is not None and o["digest"] == digest
            ]
            since = (
                max(same)
                if same
                else (current["serial_from"] if current is not None else max(ended, default=None))
            )
        value = read.get(name) if isinstance(read, dict) else None
        outputs.append(
            {
                "name": name,
                "sensitive": sensitive,
                "present": current is not None,
                "read": None if sensitive else value,
                "current": None if sensitive or current is None else current["value"],
                "changed": changed,
                "since": since,
            }
        )
    changes = [o["since"] for o in outputs if o["changed"] and o["since"] is not None]
    return {
        "outputs": outputs,
        "stale": any(o["changed"] for o in outputs),
        "since": min(changes, default=None),
    }


async def read_links(
    conn: asyncpg.Connection,
    *,
    consumers: list[UUID] | None = None,
    producers: list[UUID] | None = None,
    readable: list[str] | None = None,
) -> list[dict[str, Any]]:
    """The links of the consumers' current versions to the producers (None: any), by
    consumer name then data source address: the consumer's and the producer's state
    columns (consumer_id, consumer_name, consumer_kind, ...; producer_id, ...), address
    (the data source's), resource_id (its row), outputs (as `_compare`), stale, since."""
    names = None
    if producers is not None:
        found = await conn.fetch(_PRODUCERS, producers, None, readable)
        names = [r["producer_name"] for r in found]
    if names == []:  # no producer: no link (and no statement over every consumer)
        return []
    linked = await conn.fetch(_LINKED, consumers, names, readable)
    wanted = sorted({r["producer_name"] for r in linked})
    states = {
        r["producer_name"]: r for r in await conn.fetch(_PRODUCERS, producers, wanted, readable)
    }
    produced: dict[UUID, list[Mapping[str, Any]]] = {}
    # with no producer, an id no state has: the statement still runs (a read costs the
    # same statements however many links it finds), on one shard
    ids = [r["producer_id"] for r in states.values()] or [_NO_STATE]
    # only the outputs some link read; a past version's value is never shown
    read = sorted({name for link in linked for name in link["digests"]})
    for output in await conn.fetch(_PRODUCED, ids, read):
        produced.setdefault(output["state_id"], []).append(dict(output))
    links: list[dict[str, Any]] = []
    for link in linked:
        producer = states.get(link["producer_name"])
        if producer is None:
            continue
        compared = _compare(
            link["digests"], link["outputs"], produced.get(producer["producer_id"], [])
        )
        kept = {k: v for k, v in link.items() if k not in ("producer_name", "digests", "outputs")}
        links.append({**kept, **dict(producer), **compared})
    links.sort(key=lambda r: (r["consumer_name"], r["address"]))
    return links


async def links_by_producer(
    conn: asyncpg.Connection, producer_ids: list[UUID], readable: list[str] | None = None
) -> dict[UUID, list[dict[str, Any]]]:
    found = await read_links(conn, producers=producer_ids, readable=readable)
    return _grouped(found, "producer_id")


async def links_by_consumer(
    conn: asyncpg.Connection, consumer_ids: list[UUID], readable: list[str] | None = None
) -> dict[UUID, list[dict[str, Any]]]:
    found = await read_links(conn, consumers=consumer_ids, readable=readable)
    return _grouped(found, "consumer_id")


def _grouped(records: list[dict[str, Any]], column: str) -> dict[UUID, list[dict[str, Any]]]:
    grouped: dict[UUID, list[dict[str, Any]]] = {}
    for record in records:
        grouped.setdefault(record[column], []).append(record)
    return grouped


async def record_stale(
    conn: asyncpg.Connection, producer_id: UUID, serial: int, *, actor: str
) -> list[dict[str, Any]]:
    """A `consumer-stale` event for each consumer this write of the producer (at `serial`)
    made stale: stale now, and each output it read that differs stopped being the value
    read at this serial (so none differed before). Returns their links."""
    made = [
        link
        for link in await read_links(conn, producers=[producer_id])
        if link["stale"] and link["since"] == serial
    ]
    for link in made:
        detail: dict[str, Any] = {
            "producer": link["producer_name"],
            "producer_serial": serial,
            "data_source": link["address"],
            "outputs": [o["name"] for o in link["outputs"] if o["changed"]],
        }
        await append_event(
            conn,
            state_name=link["consumer_name"],
            state_id=link["consumer_id"],
            action=STALE,
            actor=actor,
            detail=detail,
        )
    return made


async def forget_links(conn: asyncpg.Connection, state_id: UUID) -> None:
    """A deleted state's links (as consumer) and output lineage."""
    await conn.execute(
        """WITH links AS (DELETE FROM state_links WHERE state_id = $1)
           DELETE FROM output_lineage WHERE state_id = $1""",
        state_id,
    )
