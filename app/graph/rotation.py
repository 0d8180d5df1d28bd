"""Re-seal a database's state under the current key: `infragraph rotate-key`.

Whatever is sealed under another key, or in clear while there is a key (or sealed while
there is none), is opened with the keyring (INFRAGRAPH_ENCRYPTION_KEY_OLD opens the old
key's values) and stored again as a write would store it now: raw chunks (their hash is
keyed, so each version's list of hashes follows), versions' MD5, rows' secrets and the
content hashes that depend on them. Rows written before migration 0014, which hold their
secrets in place, are split; versions still holding their bytes inline (before 0009) are
moved to chunks when there is a key. Output and link digests are made again under the
current key (app/graph/digests.py), and each state's sensitive outputs are taken out of
its consumers' rows that still hold them (app/graph/sealing.py; rows written before
migration 0021).

It runs state by state, in batches, each batch one transaction under the state's row
lock (the lock writers take): a write waits for at most one batch, readers never wait,
and a stream of raw bytes that a batch re-keys under it keeps reading the same bytes
(chunk lengths do not change, and each piece reads the version's hashes anew). What a
batch did is committed, and only what is not under the current key is selected, so a
run that stops can be run again: it carries on.
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import asyncpg
import zstandard

from app import crypto
from app.graph import digests
from app.graph.links import note_sensitive_outputs
from app.graph.raw import MD5_BYTES, open_md5, save_raw, seal_md5
from app.graph.readback import INSTANCE_SELECT, OUTPUT_SELECT, instance_of, output_of
from app.graph.sealing import reseal_consumers
from app.graph.sensitive import Stored, opened, stored_instance, stored_output
from app.jsonutil import dumps
from app.tfstate.remote import remote_outputs

# Rows per batch; chunks per batch (at most 256 KiB each: 16 MiB at most)
BATCH_ROWS = 500
BATCH_CHUNKS = 64


@dataclass
class Rotated:
    """What a run re-sealed, by kind, in all states."""

    states: int = 0
    counts: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("inline", "chunks", "md5", "resources", "outputs", "digests", "links", "consumers"),
            0,
        )
    )


def _stale(column: str, ring: crypto.Keyring, fixed_size: int | None = None) -> str:
    """SQL: `column` (bytea) is not stored as the current keyring would store it."""
    prefix = ring.prefix
    clear = (
        f"octet_length({column}) = {fixed_size}"
        if fixed_size is not None
        else f"substring({column} FROM 1 FOR 1) <> '\\x01'::bytea"
    )
    if prefix is None:
        return f"NOT ({clear})"
    return (
        f"(({clear}) OR substring({column} FROM 1 FOR {len(prefix)}) <> '\\x{prefix.hex()}'::bytea)"
    )


async def rotate(
    conn: asyncpg.Connection, report: Callable[[str, dict[str, int]], None] | None = None
) -> Rotated:
    """Re-seal every state under the keyring's current key; `report(state, counts)`
    after each state that had anything to re-seal."""
    done = Rotated()
    for state in await conn.fetch("SELECT id, name FROM states ORDER BY name"):
        counts = await rotate_state(conn, state["id"])
        async with conn.transaction():  # its sensitive outputs, in rows of its consumers
            # their names as its outputs say (kept up to date by writes; made sure here)
            await note_sensitive_outputs(conn, state["id"])
            counts["consumers"] = await reseal_consumers(conn, state["name"])
        if any(counts.values()):
            done.states += 1
            for kind, count in counts.items():
                done.counts[kind] += count
            if report is not None:
                report(state["name"], counts)
    return done


async def rotate_state(conn: asyncpg.Connection, state_id: UUID) -> dict[str, int]:
    """Re-seal one state; how many values of each kind it re-sealed."""
    return {
        "inline": await _batches(conn, state_id, _inline) if crypto.keyring().encrypting else 0,
        "chunks": await _batches(conn, state_id, _chunks),
        "md5": await _batches(conn, state_id, _md5),
        "resources": await _batches(conn, state_id, _resources),
        "outputs": await _batches(conn, state_id, _outputs),
        "digests": await _batches(conn, state_id, _value_digests),
        "links": await _batches(conn, state_id, _link_digests),
    }


# One batch: re-seals up to a batch of one kind of value of a state; how many it did.
Batch = Callable[[asyncpg.Connection, UUID, crypto.Keyring], Awaitable[int]]


async def _batches(conn: asyncpg.Connection, state_id: UUID, batch: Batch) -> int:
    """Run `batch` until it finds nothing left, each in a transaction under the state's
    row lock; how many it re-sealed in all."""
    total = 0
    while True:
        async with conn.transaction():
            locked = await conn.fetchval("SELECT 1 FROM states WHERE id = $1 FOR UPDATE", state_id)
            done = await batch(conn, state_id, crypto.keyring()) if locked else 0
        if not done:
            return total
        total += done


async def _inline(conn: asyncpg.Connection, state_id: UUID, ring: crypto.Keyring) -> int:
    """A version written before migration 0009 (raw bytes inline, in clear) to chunks."""
    version = await conn.fetchrow(
        """SELECT id, raw_state FROM state_versions
           WHERE state_id = $1 AND raw_state IS NOT NULL LIMIT 1""",
        state_id,
    )
    if version is None:
        return 0
    await conn.execute(
        """UPDATE state_versions SET raw_chunks = $3, raw_state = NULL
           WHERE state_id = $1 AND id = $2""",
        state_id,
        version["id"],
        await save_raw(conn, state_id, version["raw_state"]),
    )
    return 1


async def _chunks(conn: asyncpg.Connection, state_id: UUID, ring: crypto.Keyring) -> int:
    """Chunks: each opened, its hash computed anew (keyed), sealed again; the versions
    listing the old hash list the new one; the old row goes."""
    stale = await conn.fetch(
        f"""SELECT hash, length, data FROM raw_state_chunks
            WHERE state_id = $1 AND {_stale("data", ring)} LIMIT {BATCH_CHUNKS}""",
        state_id,
    )
    if not stale:
        return 0
    decompressor = zstandard.ZstdDecompressor()
    context = state_id.bytes
    old_hashes, new_hashes, data = [], [], []
    for chunk in stale:
        frame = ring.open(chunk["data"], context)
        old_hashes.append(chunk["hash"])
        new_hashes.append(ring.mac(decompressor.decompress(frame)))
        data.append(ring.seal(frame, context))
    # a write under the current key may have stored the same chunk already
    await conn.execute(
        """INSERT INTO raw_state_chunks (state_id, hash, length, data)
           SELECT $1, hash, length, data
           FROM unnest($2::bytea[], $3::integer[], $4::bytea[]) AS c(hash, length, data)
           ON CONFLICT (state_id, hash) DO NOTHING""",
        state_id,
        new_hashes,
        [chunk["length"] for chunk in stale],
        data,
    )
    await conn.execute(
        "DELETE FROM raw_state_chunks WHERE state_id = $1 AND hash = ANY($2::bytea[])",
        state_id,
        old_hashes,
    )
    await conn.execute(
        """UPDATE state_versions v SET raw_chunks = (
               SELECT array_agg(coalesce(m.new, h.hash) ORDER BY h.position)
               FROM unnest(v.raw_chunks) WITH ORDINALITY AS h(hash, position)
               LEFT JOIN unnest($2::bytea[], $3::bytea[]) AS m(old, new) ON m.old = h.hash)
           WHERE v.state_id = $1 AND v.raw_chunks && $2::bytea[]""",
        state_id,
        old_hashes,
        new_hashes,
    )
    return len(stale)


async def _md5(conn: asyncpg.Connection, state_id: UUID, ring: crypto.Keyring) -> int:
    stale = await conn.fetch(
        f"""SELECT id, raw_md5 FROM state_versions
            WHERE state_id = $1 AND {_stale("raw_md5", ring, MD5_BYTES)} LIMIT {BATCH_ROWS}""",
        state_id,
    )
    await conn.execute(
        """UPDATE state_versions v SET raw_md5 = m.md5
           FROM unnest($2::uuid[], $3::bytea[]) AS m(id, md5)
           WHERE v.state_id = $1 AND v.id = m.id""",
        state_id,
        [version["id"] for version in stale],
        [seal_md5(open_md5(version["raw_md5"], state_id), state_id) for version in stale],
    )
    return len(stale)


def _rows_with_secrets(
    table: str, select: str, column: str, stored_of: Callable[[asyncpg.Record, UUID], Stored[Any]]
) -> Callable[[asyncpg.Connection, UUID, crypto.Keyring], Awaitable[int]]:
    """A batch of `table`'s rows holding secrets (`column` is what they were taken out of):
    read back as written, stored again as a write would. A content hash that is the
    original row's (no key, or no secret) stays: the one the write computed from the
    document (JSONB may have reordered keys since)."""

    async def reseal(conn: asyncpg.Connection, state_id: UUID, ring: crypto.Keyring) -> int:
        stale = await conn.fetch(
            f"""SELECT id, {select} FROM {table}
                WHERE state_id = $1 AND (secrets = '' OR {_stale("secrets", ring)})
                LIMIT {BATCH_ROWS}""",
            state_id,
        )
        stored = [stored_of(row, state_id) for row in stale]
        await conn.execute(
            f"""UPDATE {table} t SET {column} = s.{column}, secrets = s.secrets,
                       content_hash = coalesce(s.content_hash, t.content_hash)
                FROM unnest($2::uuid[], $3::jsonb[], $4::bytea[], $5::bytea[])
                     AS s(id, {column}, secrets, content_hash)
                WHERE t.state_id = $1 AND t.id = s.id""",
            state_id,
            [row["id"] for row in stale],
            [getattr(s.row, column) for s in stored],
            [s.sealed(ring, state_id) for s in stored],
            [s.keyed_digest(ring) for s in stored],
        )
        return len(stale)

    return reseal


_resources = _rows_with_secrets(
    "resources",
    INSTANCE_SELECT,
    "attributes",
    # a row's secrets stay taken where they were (a producer's sensitive output read)
    lambda row, state_id: stored_instance(
        instance_of(row, state_id), [path for path, _ in opened(row["secrets"], state_id)]
    ),
)
_outputs = _rows_with_secrets(
    "outputs", OUTPUT_SELECT, "value", lambda row, state_id: stored_output(output_of(row, state_id))
)


async def _value_digests(conn: asyncpg.Connection, state_id: UUID, ring: crypto.Keyring) -> int:
    """Outputs' value digests not made as the keyring makes them (app/graph/digests.py)."""
    stale = await conn.fetch(
        f"""SELECT id, {OUTPUT_SELECT} FROM outputs
            WHERE state_id = $1 AND (value_digest IS NULL OR value_digest NOT LIKE $2)
            LIMIT {BATCH_ROWS}""",
        state_id,
        digests.current_form(ring),
    )
    await conn.execute(
        f"""UPDATE outputs o SET value_digest = {digests.digest_sql("v.value::jsonb::text", 4)}
            FROM unnest($2::uuid[], $3::text[]) AS v (id, value)
            WHERE o.state_id = $1 AND o.id = v.id""",
        state_id,
        [row["id"] for row in stale],
        [dumps(output_of(row, state_id).value).decode() for row in stale],
        *digests.digest_args(ring),
    )
    return len(stale)


async def _link_digests(conn: asyncpg.Connection, state_id: UUID, ring: crypto.Keyring) -> int:
    """The digests of what the state's data sources read, from their rows' `outputs`."""
    stale = await conn.fetch(
        f"""SELECT l.resource_id, l.outputs AS read, r.*
            FROM state_links l
            CROSS JOIN LATERAL (SELECT {INSTANCE_SELECT} FROM resources
                                WHERE state_id = l.state_id AND id = l.resource_id) r
            WHERE l.state_id = $1 AND EXISTS (
                SELECT FROM jsonb_each_text(l.outputs) AS d WHERE d.value NOT LIKE $2)
            LIMIT {BATCH_ROWS}""",
        state_id,
        digests.current_form(ring),
    )
    values = []
    for row in stale:
        attributes = instance_of(row, state_id).attributes
        outputs = remote_outputs(attributes if isinstance(attributes, dict) else {})
        values.append(dumps({name: outputs.get(name) for name in row["read"]}).decode())
    await conn.execute(
        f"""UPDATE state_links l SET outputs = (
                SELECT coalesce(jsonb_object_agg(o.key, {digests.digest_sql("o.value::text", 4)}),
                                '{{}}')
                FROM jsonb_each(v.read::jsonb) AS o)
            FROM unnest($2::uuid[], $3::text[]) AS v (resource_id, read)
            WHERE l.state_id = $1 AND l.resource_id = v.resource_id""",
        state_id,
        [row["resource_id"] for row in stale],
        values,
        *digests.digest_args(ring),
    )
    return len(stale)
