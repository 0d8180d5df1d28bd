"""A version's raw bytes, exactly as written: content-defined chunks, each compressed and
stored once per state (migrations/0009).

FastCDC cuts a body where its content says, not at fixed offsets, so a change in the
middle of a state changes the chunks around it and no others: the next version stores
those few chunks and lists the rest by hash. Versions written before 0009 keep their
bytes inline (raw_state, uncompressed); both are read the same way, whole when small,
else streamed a piece at a time with bounded memory.
"""

import asyncio
import dataclasses
import hashlib
import io
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO, cast
from uuid import UUID

import asyncpg
import zstandard
from pyfastcdc import FastCDC

from app import crypto, db
from app.config import MIB

KIB = 1024
# Measured on a generated 20,000-instance state (21 MB compact; 43 MB indented, as
# Terraform writes it), 1-attribute changes at 8 places (compact figures):
#   min/avg/max KiB   chunks   a change adds, raw (zstd)   first version, zstd
#   4/16/64           1690     40 KiB (6 KiB)              3.69 MB
#   16/64/256          691     70 KiB (10 KiB)             3.01 MB
#   32/128/512         161     272 KiB (33 KiB)            2.63 MB
# The middle: a version lists 691 hashes (22 KB), a change adds ~10 KB of chunks.
MIN_CHUNK = 16 * KIB
AVG_CHUNK = 64 * KIB
MAX_CHUNK = 256 * KIB
# Level 1 compressed those chunks fastest and smallest (3 and 4 were slower and larger).
ZSTD_LEVEL = 1
# Bodies up to this size are read in one go; bigger ones stream in pieces of at most it.
PIECE_BYTES = 8 * MIB
# A body is cut, looked up and compressed a window of this size at a time: a window is
# held about three times over (its bytes, its chunks, the next window's start).
SAVE_WINDOW = 2 * MIB


def cut(
    body: bytes, *, min_size: int = MIN_CHUNK, avg_size: int = AVG_CHUNK, max_size: int = MAX_CHUNK
) -> list[memoryview]:
    """`body` cut into content-defined chunks (views into it), in order."""
    # a chunker per call: pyfastcdc's are not to be shared between threads
    chunker = FastCDC(avg_size, min_size=min_size, max_size=max_size)
    return [chunk.data for chunk in chunker.cut_buf(body)]


def chunk_hash(chunk: bytes | memoryview) -> bytes:
    """SHA-256 of the chunk; with a key, HMAC-SHA256 under it (app/crypto.py): a stored
    hash then confirms no guessed content."""
    return crypto.keyring().mac(chunk)


MD5_BYTES = 16


def seal_md5(md5: bytes, state_id: UUID) -> bytes:
    """A version's MD5 as stored: sealed with a key, as it would confirm a guessed body."""
    return crypto.keyring().seal(md5, state_id.bytes)


def open_md5(stored: bytes, state_id: UUID) -> bytes:
    return crypto.keyring().open_fixed(stored, MD5_BYTES, state_id.bytes)


class Body:
    """A state body as received: its bytes in memory, or spooled to a temporary file when
    big (a write then reads it a window at a time: app/tfstate/stream.py), with its size
    and MD5."""

    def __init__(self, file: BinaryIO, size: int, md5: bytes) -> None:
        self._file = file
        self.size = size
        self.md5 = md5

    @classmethod
    def of(cls, data: bytes) -> "Body":
        return cls(io.BytesIO(data), len(data), hashlib.md5(data).digest())

    def reader(self) -> Callable[[int], bytes]:
        """read(size) from the start (one reader at a time)."""
        self._file.seek(0)
        return self._file.read

    def whole(self) -> bytes:
        return self.reader()(-1)

    def close(self) -> None:
        self._file.close()


class BodySpool:
    """Receives a body a piece at a time: in memory up to `memory_bytes`, on disk past it
    (from the start when `memory_bytes` is 0)."""

    def __init__(self, memory_bytes: int) -> None:
        self._file = tempfile.SpooledTemporaryFile(max_size=memory_bytes)  # noqa: SIM115 (Body.close)
        if memory_bytes <= 0:  # tempfile's own 0 is "never"
            self._file.rollover()
        self._md5 = hashlib.md5()
        self.size = 0

    def write(self, data: bytes) -> None:
        self._file.write(data)
        self._md5.update(data)
        self.size += len(data)

    def body(self) -> Body:
        return Body(cast(BinaryIO, self._file), self.size, self._md5.digest())


def cut_stream(read: Callable[[int], bytes], window: int = PIECE_BYTES) -> Iterator[list[bytes]]:
    """The chunks `cut` makes of the bytes `read` gives, a window at a time. The last chunk
    of a window may end only because the window does: it is cut again with what follows.
    A chunk's end depends only on the bytes from its start, so the chunks are `cut`'s."""
    rest = b""
    while True:
        data = read(window)
        chunks = [bytes(chunk) for chunk in cut(rest + data)] if rest or data else []
        if not data:
            yield chunks
            return
        rest = chunks.pop()
        yield chunks


def compress(chunks: Sequence[bytes | memoryview], state_id: UUID) -> list[bytes]:
    """Each chunk as stored: one zstd frame with its checksum (a damaged chunk fails to
    decompress), sealed with a key."""
    ring = crypto.keyring()
    compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=True)
    return [ring.seal(compressor.compress(chunk), state_id.bytes) for chunk in chunks]


def decompress(stored: list[bytes], state_id: UUID) -> bytes:
    ring = crypto.keyring()
    decompressor = zstandard.ZstdDecompressor()
    return b"".join(decompressor.decompress(ring.open(data, state_id.bytes)) for data in stored)


def spans(lengths: list[int], limit: int) -> list[tuple[int, int]]:
    """Consecutive half-open ranges of `lengths`' positions, in order, each as long as it
    can be with its lengths adding up to at most `limit` (one length over it: alone)."""
    ranges: list[tuple[int, int]] = []
    start, total = 0, 0
    for position, length in enumerate(lengths):
        if total + length > limit and position > start:
            ranges.append((start, position))
            start, total = position, 0
        total += length
    if start < len(lengths):
        ranges.append((start, len(lengths)))
    return ranges


async def save_raw(conn: asyncpg.Connection, state_id: UUID, body: bytes | Body) -> list[bytes]:
    """Store the chunks of `body` that state `state_id` does not have yet; returns the
    hashes of all its chunks in order (the version row's raw_chunks). The body is cut,
    compressed and inserted a window (SAVE_WINDOW) at a time: a big write holds one.

    Call it in the transaction that inserts the version row, holding the state's row lock
    as write_version does: delete_unreferenced_chunks takes that lock too, so it cannot
    delete a chunk this write counts on. Racing writers of one chunk insert it once."""
    windows = cut_stream((body if isinstance(body, Body) else Body.of(body)).reader(), SAVE_WINDOW)
    hashes: list[bytes] = []
    stored: set[bytes] = set()  # by this write
    while (chunks := await asyncio.to_thread(next, windows, None)) is not None:
        digests = [chunk_hash(chunk) for chunk in chunks]
        hashes += digests
        distinct = dict(zip(digests, chunks, strict=True))
        have = {
            record["hash"]
            for record in await conn.fetch(
                """SELECT hash FROM raw_state_chunks
                   WHERE state_id = $1 AND hash = ANY($2::bytea[])""",
                state_id,
                [digest for digest in distinct if digest not in stored],
            )
        }
        missing = [digest for digest in distinct if digest not in have and digest not in stored]
        stored.update(distinct)
        if not missing:
            continue
        data = await asyncio.to_thread(compress, [distinct[digest] for digest in missing], state_id)
        await conn.execute(
            """INSERT INTO raw_state_chunks (state_id, hash, length, data)
               SELECT $1, hash, length, data
               FROM unnest($2::bytea[], $3::integer[], $4::bytea[]) AS c(hash, length, data)
               ON CONFLICT (state_id, hash) DO NOTHING""",
            state_id,
            missing,
            [len(distinct[digest]) for digest in missing],
            data,
        )
    return hashes


async def delete_unreferenced_chunks(conn: asyncpg.Connection, state_id: UUID) -> int:
    """Delete the chunks of state `state_id` that no remaining version lists (after some
    were pruned); returns how many went."""
    async with conn.transaction():
        # Writers hold this lock from before they look for stored chunks until their version
        # row commits. Taken in a statement of its own, so that the DELETE's snapshot,
        # taken after it, sees every version committed before.
        await conn.execute("SELECT 1 FROM states WHERE id = $1 FOR UPDATE", state_id)
        deleted: int = await conn.fetchval(
            """WITH listed AS (SELECT DISTINCT unnest(raw_chunks) AS hash
                               FROM state_versions WHERE state_id = $1),
                    gone AS (DELETE FROM raw_state_chunks c
                             WHERE c.state_id = $1
                               AND NOT EXISTS (SELECT 1 FROM listed WHERE listed.hash = c.hash)
                             RETURNING 1)
               SELECT count(*) FROM gone""",
            state_id,
        )
    return deleted


@dataclass(frozen=True)
class RawVersion:
    """Where a version's raw bytes are, their size and MD5; `body` holds the bytes when
    they were read whole (at most PIECE_BYTES)."""

    state_id: UUID
    version_id: UUID
    md5: bytes
    size: int
    # the uncompressed length of each chunk, in order; None: inline in raw_state (pre-0009)
    chunk_lengths: list[int] | None
    body: bytes | None = None

    def pieces(self) -> list[tuple[int, int]]:
        """Half-open ranges to read one at a time, each of at most PIECE_BYTES: of chunk
        positions, or of byte offsets for inline bytes."""
        if self.chunk_lengths is None:
            return [
                (offset, min(offset + PIECE_BYTES, self.size))
                for offset in range(0, self.size, PIECE_BYTES)
            ]
        return spans(self.chunk_lengths, PIECE_BYTES)


async def raw_version(
    conn: asyncpg.Connection, name: str, serial: int | None = None, *, read: bool = True
) -> RawVersion | None:
    """The version of state `name` at `serial` (default: the current one) as written, with
    its bytes when they are at most PIECE_BYTES long (bigger ones are read with
    stream_raw; none with `read` False: its MD5 may be all the caller needs); None when
    there is no such version."""
    # the state by name first, then its version by its id (one shard on Citus)
    state_id = await conn.fetchval("SELECT id FROM states WHERE name = $1", name)
    if state_id is None:
        return None
    head = await conn.fetchrow(
        # a chunk missing (deleted meanwhile) keeps its place as length 0, so that the
        # read of its piece finds it missing
        """SELECT v.id, v.state_id, v.raw_md5, octet_length(v.raw_state) AS inline_size,
                  (SELECT coalesce(array_agg(coalesce(c.length, 0) ORDER BY h.position), '{}')
                   FROM unnest(v.raw_chunks) WITH ORDINALITY AS h(hash, position)
                   LEFT JOIN raw_state_chunks c ON c.state_id = $1 AND c.hash = h.hash
                  ) AS chunk_lengths
           FROM state_versions v
           WHERE v.state_id = $1 AND ($2::bigint IS NULL OR v.serial = $2)
           ORDER BY v.serial DESC LIMIT 1""",
        state_id,
        serial,
    )
    if head is None:
        return None
    chunk_lengths = None if head["inline_size"] is not None else head["chunk_lengths"]
    version = RawVersion(
        state_id=head["state_id"],
        version_id=head["id"],
        md5=open_md5(head["raw_md5"], head["state_id"]),
        size=head["inline_size"] if chunk_lengths is None else sum(chunk_lengths),
        chunk_lengths=chunk_lengths,
    )
    if version.size > PIECE_BYTES or not read:
        return version
    whole = (0, version.size if chunk_lengths is None else len(chunk_lengths))
    body = await _read_piece(conn, version, *whole)
    if body is None:  # deleted since the statement above
        return None
    return dataclasses.replace(version, body=body)


async def stream_raw(pool: db.Pool, version: RawVersion) -> AsyncIterator[bytes]:
    """The bytes of `version`, a piece at a time; no connection is held between pieces
    (so none while the client reads). Raises when the version is deleted meanwhile."""
    for start, stop in version.pieces():
        async with db.connection(pool) as conn:
            piece = await _read_piece(conn, version, start, stop)
        if piece is None:  # cut the response short, visibly
            raise RuntimeError(f"state version {version.version_id} was deleted while being sent")
        yield piece


async def whole_raw(conn: asyncpg.Connection, version: RawVersion) -> bytes:
    """The bytes of `version` at once, on `conn` (a lease's merged write reads the head
    while holding the state's row)."""
    if version.body is not None:
        return version.body
    pieces = []
    for start, stop in version.pieces():
        piece = await _read_piece(conn, version, start, stop)
        if piece is None:
            raise RuntimeError(f"state version {version.version_id} was deleted while read")
        pieces.append(piece)
    return b"".join(pieces)


async def _read_piece(
    conn: asyncpg.Connection, version: RawVersion, start: int, stop: int
) -> bytes | None:
    """Bytes [start, stop) of an inline version, or its chunks [start, stop) decompressed;
    None when the version or one of those chunks is gone."""
    if version.chunk_lengths is None:
        # uncompressed (0004), so substring() reads only the TOAST chunks of its slice
        inline: bytes | None = await conn.fetchval(
            """SELECT substring(raw_state FROM $3 FOR $4) FROM state_versions
               WHERE state_id = $1 AND id = $2""",
            version.state_id,
            version.version_id,
            start + 1,
            stop - start,
        )
        return inline
    rows = await conn.fetch(
        # `$3 : $4` spaced: unspaced, sqlglot (tests/api/test_distribution.py) reads a
        # dollar quote
        """SELECT c.data
           FROM state_versions v
           CROSS JOIN LATERAL unnest(v.raw_chunks[$3 : $4]) WITH ORDINALITY AS h(hash, position)
           JOIN raw_state_chunks c ON c.state_id = v.state_id AND c.hash = h.hash
           WHERE v.state_id = $1 AND v.id = $2
           ORDER BY h.position""",
        version.state_id,
        version.version_id,
        start + 1,
        stop,
    )
    if len(rows) != stop - start:
        return None
    return await asyncio.to_thread(decompress, [row["data"] for row in rows], version.state_id)
