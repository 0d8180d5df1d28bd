"""Raw bytes as content-defined chunks: the chunker, storage and dedup in PostgreSQL,
reading back whole or streamed, retention, and GET over HTTP for both storages."""

import asyncio
import base64
import hashlib
import io
import random
from uuid import UUID

import asyncpg
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from app import db
from app.graph.raw import (
    MAX_CHUNK,
    MIN_CHUNK,
    PIECE_BYTES,
    BodySpool,
    RawVersion,
    chunk_hash,
    cut,
    cut_stream,
    delete_unreferenced_chunks,
    raw_version,
    save_raw,
    spans,
    stream_raw,
)
from app.graph.states import ensure_state
from app.graph.write.version import write_version
from app.jsonutil import dumps
from bench.generate import generate_state
from tests.helpers.corpus import corpus_files
from tests.helpers.live_server import LiveServer, server_fixture
from tests.helpers.states import BUILTIN, resource, state
from tests.helpers.waiting import until_waiting_on

# the smallest sizes pyfastcdc takes, so that hypothesis' small inputs make many chunks
SMALL = {"min_size": 64, "avg_size": 256, "max_size": 1024}

server = server_fixture({"INFRAGRAPH_API_TOKENS": None}, scope="module")


def _state_pair(instances: int) -> tuple[bytes, bytes]:
    """A generated state and its next version: serial + 1, one attribute changed midway."""
    document = generate_state(instances)
    first = dumps(document)
    document["serial"] = 2
    middle = document["resources"][len(document["resources"]) // 2]
    middle["instances"][0]["attributes"]["size"] = 999_999
    return first, dumps(document)


def _noise(size: int, seed: int = 0) -> bytes:
    return random.Random(seed).randbytes(size)


def _md5_header(body: bytes) -> str:
    return base64.b64encode(hashlib.md5(body).digest()).decode()


async def _add_version(
    conn: asyncpg.Connection, name: str, serial: int, body: bytes, *, inline: bool = False
) -> UUID:
    """A version row holding only raw bytes: chunked as written now, or inline as written
    before migration 0009 (raw_state set, raw_chunks NULL)."""
    state_id = await ensure_state(conn, name)
    async with conn.transaction():
        chunks = None if inline else await save_raw(conn, state_id, body)
        return await conn.fetchval(
            """INSERT INTO state_versions
                   (state_id, serial, lineage, raw_state, raw_chunks, raw_md5)
               VALUES ($1, $2, 'L', $3, $4, $5) RETURNING id""",
            state_id,
            serial,
            body if inline else None,
            chunks,
            hashlib.md5(body).digest(),
        )


async def _read_all(pool: db.Pool, conn: asyncpg.Connection, name: str) -> bytes:
    version = await raw_version(conn, name)
    assert version is not None
    if version.body is not None:
        return version.body
    pieces = [piece async for piece in stream_raw(pool, version)]
    assert len(pieces) == len(version.pieces()) > 1
    assert all(len(piece) <= PIECE_BYTES for piece in pieces)
    return b"".join(pieces)


async def _stored_chunks(conn: asyncpg.Connection) -> tuple[int, int]:
    """How many chunks are stored, and their compressed bytes."""
    row = await conn.fetchrow(
        "SELECT count(*) AS n, coalesce(sum(octet_length(data)), 0) AS bytes FROM raw_state_chunks"
    )
    return row["n"], row["bytes"]


# --- the chunker, pure -----------------------------------------------------------------


@given(data=st.binary(max_size=20_000))
def test_chunks_concatenate_to_the_input_within_their_sizes(data: bytes) -> None:
    chunks = cut(data, **SMALL)
    assert b"".join(chunks) == data
    assert all(len(chunk) <= SMALL["max_size"] for chunk in chunks)
    assert all(len(chunk) >= SMALL["min_size"] for chunk in chunks[:-1])


@given(
    data=st.binary(min_size=1, max_size=20_000), where=st.floats(0, 1), value=st.integers(1, 255)
)
def test_a_change_leaves_the_chunks_before_it_alone(data: bytes, where: float, value: int) -> None:
    position = min(int(where * len(data)), len(data) - 1)
    changed = bytearray(data)
    changed[position] ^= value
    before, after = cut(data, **SMALL), cut(bytes(changed), **SMALL)
    end = 0
    for old, new in zip(before, after, strict=False):
        end += len(old)
        if end >= position:  # a cut is decided by the bytes up to just past it
            break
        assert old == new


def test_a_one_attribute_change_changes_few_chunks() -> None:
    first, second = _state_pair(5000)
    old = {chunk_hash(chunk) for chunk in cut(first)}
    new_chunks = [chunk for chunk in cut(second) if chunk_hash(chunk) not in old]
    # the serial at the top, the attribute midway: a chunk each, a neighbour at most
    assert 2 <= len(new_chunks) <= 4
    assert sum(map(len, new_chunks)) <= 4 * MAX_CHUNK < len(first) // 5


@given(st.lists(st.integers(1, 100), max_size=200), st.integers(1, 300))
def test_spans_cover_every_position_in_order_each_as_long_as_fits(
    lengths: list[int], limit: int
) -> None:
    ranges = spans(lengths, limit)
    assert [p for piece in ranges for p in range(*piece)] == list(range(len(lengths)))
    for start, stop in ranges:
        assert sum(lengths[start:stop]) <= limit or stop - start == 1
        if stop < len(lengths):  # cut only where the next length would not fit
            assert sum(lengths[start : stop + 1]) > limit


def test_pieces_of_chunks_are_spans_of_at_most_a_piece() -> None:
    lengths = [MAX_CHUNK] * 70
    version = RawVersion(UUID(int=0), UUID(int=1), b"", sum(lengths), lengths)
    per_piece = PIECE_BYTES // MAX_CHUNK
    assert version.pieces() == [(0, per_piece), (per_piece, 2 * per_piece), (2 * per_piece, 70)]


def test_pieces_of_inline_bytes_are_byte_ranges() -> None:
    size = 2 * PIECE_BYTES + 5
    version = RawVersion(UUID(int=0), UUID(int=1), b"", size, None)
    assert version.pieces() == [
        (0, PIECE_BYTES),
        (PIECE_BYTES, 2 * PIECE_BYTES),
        (2 * PIECE_BYTES, size),
    ]


# --- stored in PostgreSQL ----------------------------------------------------------------


async def test_every_corpus_state_reads_back_byte_for_byte(conn) -> None:
    for index, path in enumerate(corpus_files()):
        body = path.read_bytes()
        await write_version(conn, f"corpus/{index}", body, actor="test")
        version = await raw_version(conn, f"corpus/{index}")
        assert version is not None and version.body == body, path.name
        assert version.md5 == hashlib.md5(body).digest() and version.size == len(body)


@pytest.mark.parametrize(
    ("label", "body"),
    [
        ("empty", b""),
        ("one byte", b"x"),
        ("just under a chunk", _noise(MIN_CHUNK - 1)),
        ("incompressible, 3 pieces", _noise(2 * PIECE_BYTES + 12345)),
        ("repetitive", b'{"a": 1}, ' * (3 * PIECE_BYTES // 10)),
        ("a piece exactly", _noise(PIECE_BYTES, seed=1)),
    ],
)
async def test_bodies_read_back_byte_for_byte(pool, conn, label: str, body: bytes) -> None:
    await _add_version(conn, "s", 1, body)
    assert await _read_all(pool, conn, "s") == body, label


async def test_inline_versions_written_before_chunks_read_back(pool, conn) -> None:
    small, big = b'{"version": 4}', _noise(PIECE_BYTES + 1000)
    await _add_version(conn, "small", 1, small, inline=True)
    await _add_version(conn, "big", 1, big, inline=True)
    assert await _read_all(pool, conn, "small") == small
    assert await _read_all(pool, conn, "big") == big
    # the next version is chunked, the old one stays as it was
    await _add_version(conn, "big", 2, big[::-1])
    assert await _read_all(pool, conn, "big") == big[::-1]


async def test_a_version_needs_its_bytes_one_way_or_the_other(conn) -> None:
    state_id = await ensure_state(conn, "s")
    for raw_state, raw_chunks in ((None, None), (b"x", [chunk_hash(b"x")])):
        with pytest.raises(asyncpg.CheckViolationError):
            await conn.execute(
                """INSERT INTO state_versions (state_id, serial, lineage, raw_state, raw_chunks,
                                               raw_md5) VALUES ($1, 1, 'L', $2, $3, '')""",
                state_id,
                raw_state,
                raw_chunks,
            )


async def test_a_one_attribute_change_stores_few_new_chunks(conn) -> None:
    first, second = _state_pair(5000)
    await _add_version(conn, "s", 1, first)
    chunks, stored = await _stored_chunks(conn)
    assert stored < len(first) / 4  # compressed
    await _add_version(conn, "s", 2, second)
    more_chunks, more_stored = await _stored_chunks(conn)
    assert 2 <= more_chunks - chunks <= 4
    assert more_stored - stored < len(first) / 100
    lists = await conn.fetch("SELECT raw_chunks FROM state_versions ORDER BY serial")
    shared = set(lists[0]["raw_chunks"]) & set(lists[1]["raw_chunks"])
    assert len(lists[1]["raw_chunks"]) - len(shared) <= 4
    for serial, body in ((1, first), (2, second)):
        version = await raw_version(conn, "s", serial)
        assert version is not None and version.body == body


async def test_the_same_chunks_in_another_state_are_stored_again(conn) -> None:
    body = _noise(3 * MAX_CHUNK)
    await _add_version(conn, "a", 1, body)
    chunks, _ = await _stored_chunks(conn)
    await _add_version(conn, "b", 1, body)
    assert (await _stored_chunks(conn))[0] == 2 * chunks  # a state's chunks are its own


async def test_racing_writers_of_the_same_chunks_store_each_once(pool, conn) -> None:
    body = _noise(4 * MAX_CHUNK)
    state_id = await ensure_state(conn, "s")
    async with pool.acquire() as first, pool.acquire() as second:
        # neither takes the state's row lock: each sees none of the other's chunks
        first_tx, second_tx = first.transaction(), second.transaction()
        await first_tx.start()
        await second_tx.start()
        hashes = await save_raw(first, state_id, body)
        racing = asyncio.create_task(save_raw(second, state_id, body))
        # the second waits on the first's uncommitted chunks (their unique index entries)
        await until_waiting_on(conn, {"transactionid"})
        assert not racing.done()
        await first_tx.commit()
        assert await racing == hashes
        await second_tx.commit()
    assert (await _stored_chunks(conn))[0] == len(set(hashes))


async def test_a_stream_stops_when_its_version_is_deleted(pool, conn) -> None:
    body = _noise(2 * PIECE_BYTES + 1)
    await _add_version(conn, "s", 1, body)
    await _add_version(conn, "t", 1, body)  # the same bytes in another state
    for name in ("s", "t"):
        version = await raw_version(conn, name)
        assert version is not None and version.body is None
        stream = stream_raw(pool, version)
        first_piece = await anext(stream)
        assert first_piece and body.startswith(first_piece)
        if name == "s":  # the version and its chunks
            await conn.execute("DELETE FROM states WHERE name = $1", name)
        else:  # the version only: its chunks are still there
            await conn.execute("DELETE FROM state_versions WHERE id = $1", version.version_id)
        with pytest.raises(RuntimeError, match="deleted while being sent"):
            async for _ in stream:
                pass
    assert await raw_version(conn, "s") is None


async def test_unreferenced_chunks_are_deleted_and_the_rest_still_read(pool, conn) -> None:
    first, second = _state_pair(2000)
    old_version = await _add_version(conn, "s", 1, first)
    await _add_version(conn, "s", 2, second)
    await _add_version(conn, "other", 1, first)
    state_id = await conn.fetchval("SELECT id FROM states WHERE name = 's'")
    assert await delete_unreferenced_chunks(conn, state_id) == 0
    await conn.execute("DELETE FROM state_versions WHERE id = $1", old_version)
    first_only = set(cut(first)) - set(cut(second))  # chunks (as bytes) only version 1 had
    assert await delete_unreferenced_chunks(conn, state_id) == len(
        {chunk_hash(chunk) for chunk in first_only}
    )
    assert await _read_all(pool, conn, "s") == second
    assert await _read_all(pool, conn, "other") == first  # another state's are its own
    await conn.execute("DELETE FROM states WHERE name = 's'")
    assert (
        await conn.fetchval("SELECT count(*) FROM raw_state_chunks WHERE state_id = $1", state_id)
        == 0
    )


# --- GET over HTTP ---------------------------------------------------------------------


async def _get(server: LiveServer, name: str) -> httpx.Response:
    async with httpx.AsyncClient(
        base_url=server.url, timeout=120, headers={"Content-Type": "application/json"}
    ) as client:
        return await client.get(f"/states/{name}")


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "chunked"])
@pytest.mark.parametrize("size", [1000, PIECE_BYTES + 1000], ids=["small", "streamed"])
async def test_get_serves_the_bytes_with_their_md5(server, conn, inline: bool, size: int) -> None:
    body = _noise(size)
    await _add_version(conn, "s", 1, body, inline=inline)
    got = await _get(server, "s")
    assert got.status_code == 200
    assert got.content == body
    assert got.headers["content-md5"] == _md5_header(body)
    assert got.headers["content-length"] == str(size)


async def test_a_state_posted_bigger_than_a_piece_streams_back_intact(server, conn) -> None:
    noise = _noise(3 * PIECE_BYTES // 4).hex()  # 1.5 pieces, compresses only 2:1
    body = state(
        [resource("terraform_data", "blob", attributes={"input": noise}, provider=BUILTIN)]
    )
    async with httpx.AsyncClient(
        base_url=server.url, timeout=120, headers={"Content-Type": "application/json"}
    ) as client:
        assert (await client.post("/states/s", content=body)).status_code == 200
    got = await _get(server, "s")
    assert got.content == body
    assert got.headers["content-md5"] == _md5_header(body)
    assert await conn.fetchval("SELECT raw_state FROM state_versions") is None


@pytest.mark.parametrize("window", [MAX_CHUNK + 1, 300_000, 1 << 20])
def test_chunks_cut_a_window_at_a_time_are_those_cut_whole(window: int) -> None:
    rng = random.Random(window)
    data = b"".join(
        rng.randbytes(rng.randrange(1, 50_000)) * rng.randrange(1, 4) for _ in range(80)
    )
    reader = io.BytesIO(data).read
    streamed = [chunk for chunks in cut_stream(reader, window) for chunk in chunks]
    assert streamed == [bytes(chunk) for chunk in cut(data)]
    assert [c for chunks in cut_stream(io.BytesIO(b"").read, window) for c in chunks] == []


@pytest.mark.parametrize("memory_bytes", [0, 4, 1 << 20])
def test_a_spooled_body_reads_back_what_was_written_in_memory_or_on_disk(
    memory_bytes: int,
) -> None:
    spool = BodySpool(memory_bytes)
    for piece in (b'{"a":', b"1", b"}"):
        spool.write(piece)
    body = spool.body()
    try:
        assert (body.whole(), body.size) == (b'{"a":1}', 7)
        assert body.md5 == hashlib.md5(b'{"a":1}').digest()
        # 0: on disk from the first byte (a body declared bigger than memory holds)
        on_disk = memory_bytes < 7
        assert spool._file._rolled is on_disk
    finally:
        body.close()
