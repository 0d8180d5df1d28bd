"""Encryption at rest (app/crypto.py): with a key, a pg_dump of the database holds no
sensitive value and no raw state in clear, and everything still reads back exactly;
`rotate-key` (app/graph/rotation.py) moves a database from clear to a key, and from one
key to the next, in batches that can be run again."""

import base64
import hashlib
import json
import os
import uuid
from collections.abc import Iterator

import asyncpg
import httpx
import pytest
from hypothesis import HealthCheck, given, settings

from app import crypto
from app.graph.diff import diff_versions
from app.graph.history import histories
from app.graph.raw import PIECE_BYTES, raw_version, stream_raw
from app.graph.readback import export_state, find_version
from app.graph.resources import find_resource
from app.graph.rotation import rotate
from app.graph.write.version import write_version
from app.iac.state import reseal_hash_key, secret_key
from app.jsonutil import dumps
from app.tfstate import scan_state
from tests.helpers.corpus import corpus_files
from tests.helpers.histories import as_numbers
from tests.helpers.live_server import live_server
from tests.helpers.postgres_tools import pg_dump
from tests.helpers.secrets import PLANTED, leaks, secret_state
from tests.helpers.strategies import states

KEY, NEW_KEY = os.urandom(32), os.urandom(32)


@pytest.fixture
def sealed() -> Iterator[crypto.Keyring]:
    with crypto.using(crypto.Keyring(KEY)) as ring:
        yield ring


async def _write_everything(conn: asyncpg.Connection) -> list[bytes]:
    bodies = [secret_state(1), secret_state(2, password="hunter2-planted!")]
    for body in bodies:
        await write_version(conn, "s", body, actor="t")
    await secret_key(conn, None)  # the database-kept IaC hash key
    return bodies


async def test_a_dump_holds_secrets_in_clear_without_a_key(conn, database_url) -> None:
    # the check below can fail: in clear, every kind of leak is there
    bodies = await _write_everything(conn)
    found = leaks(pg_dump(database_url), bodies)
    assert set(found) >= {*PLANTED, "\\x28b52ffd", "md5 of a body"}


async def test_a_dump_holds_no_secret_and_no_raw_state_with_a_key(
    conn, database_url, sealed
) -> None:
    bodies = await _write_everything(conn)
    key = await secret_key(conn, None)
    dump = pg_dump(database_url)
    assert leaks(dump, bodies) == []
    assert key.hex() not in dump
    # and every version reads back: its bytes, their MD5, its export; and the IaC key
    for serial, body in enumerate(bodies, start=1):
        version = await raw_version(conn, "s", serial)
        assert version is not None and version.body == body
        assert version.md5 == hashlib.md5(body).digest()
        assert await export_state(conn, "s", serial=serial, actor="t") == json.loads(body)
    assert await secret_key(conn, None) == key


async def test_a_changed_secret_still_shows_as_changed_with_a_key(conn, sealed) -> None:
    await _write_everything(conn)
    current = await find_version(conn, "s")
    [diff] = (await diff_versions(conn, [(current["id"], 1)])).values()
    assert [(c.address, [(a.path, a.sensitive) for a in c.changes]) for c in diff.changed] == [
        ("aws_db_instance.db", [(("password",), True)])
    ]
    db = await find_resource(conn, "s", "aws_db_instance.db")
    [page] = (await histories(conn, [(db["id"], db["version_id"])], first=5)).values()
    assert [(e.serial, [a.path for a in e.attributes]) for e in page.rows] == [
        (2, [("password",)]),
        (1, []),
    ]
    # the same secret again shares the row: its content hash is stable under the key
    await write_version(conn, "s", secret_state(3, password="hunter2-planted!"), actor="t")
    assert (
        await conn.fetchval("SELECT count(*) FROM resources WHERE address = $1", db["address"]) == 2
    )


async def test_raw_hashes_are_keyed_with_a_key_and_still_keep_rows(conn, sealed) -> None:
    # a raw hash covers a resource's bytes, its secrets included: stored plain, it would
    # confirm a guessed secret
    written = await write_version(conn, "s", secret_state(1), actor="t")
    rows = "SELECT id, raw_hash FROM resources WHERE state_id = $1 AND serial_to IS NULL"
    before = {r["id"]: r["raw_hash"] for r in await conn.fetch(rows, written.state_id)}
    scanned = list(scan_state(secret_state(1)).instances())
    assert not {i.raw_hash for i in scanned} & set(before.values())
    assert set(before.values()) == {sealed.mac(i.raw_hash) for i in scanned}
    await write_version(conn, "s", secret_state(2), actor="t")
    after = {r["id"]: r["raw_hash"] for r in await conn.fetch(rows, written.state_id)}
    assert after == before  # every row kept, by its keyed raw hash


async def test_every_corpus_state_round_trips_with_a_key(conn, sealed) -> None:
    for index, path in enumerate(corpus_files()):
        body = path.read_bytes()
        await write_version(conn, f"corpus/{index}", body, actor="t")
        version = await raw_version(conn, f"corpus/{index}")
        assert version is not None and version.body == body, path.name
        assert version.md5 == hashlib.md5(body).digest()
        exported = await export_state(conn, f"corpus/{index}", actor="t")
        assert exported == json.loads(body), path.name


async def test_a_big_body_streams_back_with_a_key(pool, conn, sealed) -> None:
    body = (
        secret_state()[:-2]
        + b', "zz_padding": "'
        + base64.b64encode(os.urandom(PIECE_BYTES * 2))
        + b'"\n}'
    )
    await write_version(conn, "big", body, actor="t")
    version = await raw_version(conn, "big")
    assert version is not None and version.body is None  # streamed, a piece at a time
    pieces = [piece async for piece in stream_raw(pool, version)]
    assert len(pieces) > 1 and b"".join(pieces) == body


async def test_rotate_from_clear_to_a_key_then_to_the_next(conn, database_url) -> None:
    bodies = await _write_everything(conn)
    iac_key = await secret_key(conn, None)
    with crypto.using(crypto.Keyring(KEY)):
        first = await rotate(conn)
        assert first.states == 1 and first.counts["resources"] == 4  # db twice, api, remote
        assert await reseal_hash_key(conn) == 1
        assert leaks(pg_dump(database_url), bodies) == []
        again = await rotate(conn)  # nothing left: it only carries on where it stopped
        assert again.states == 0 and await reseal_hash_key(conn) == 0
    sealed_under_first = pg_dump(database_url)
    with crypto.using(crypto.Keyring(NEW_KEY, KEY)):
        assert (await rotate(conn)).states == 1
        await reseal_hash_key(conn)
    with crypto.using(crypto.Keyring(NEW_KEY)):  # the old key is no longer needed
        version = await raw_version(conn, "s")
        assert version is not None and version.body == bodies[-1]
        assert await export_state(conn, "s", actor="t") == json.loads(bodies[-1])
        assert await secret_key(conn, None) == iac_key
        # a write under the new key shares the rows rotation re-sealed
        await write_version(conn, "s", secret_state(3, password="hunter2-planted!"), actor="t")
        assert await conn.fetchval("SELECT count(*) FROM resources") == 4
        dump = pg_dump(database_url)
        assert leaks(dump, bodies) == []
    assert dump != sealed_under_first
    with crypto.using(crypto.Keyring(KEY)), pytest.raises(crypto.UnknownKey):
        await export_state(conn, "s", actor="t")


def test_keys_are_32_bytes_in_base64_or_hex() -> None:
    key = os.urandom(32)
    for text in (base64.b64encode(key).decode(), base64.urlsafe_b64encode(key).decode(), key.hex()):
        assert crypto.parse_key(text, "K") == key
    for bad in ("", "short", base64.b64encode(os.urandom(16)).decode(), "zz" * 32):
        with pytest.raises(crypto.KeyFormatError, match="K must be 32 random bytes"):
            crypto.parse_key(bad, "K")


def test_a_sealed_value_opens_only_in_its_context_and_under_its_key() -> None:
    ring = crypto.Keyring(KEY)
    stored = ring.seal(b"secret", b"state a")
    assert stored != ring.seal(b"secret", b"state a")  # a random nonce each time
    assert b"secret" not in stored and ring.open(stored, b"state a") == b"secret"
    with pytest.raises(crypto.UnknownKey):
        ring.open(stored, b"state b")
    with pytest.raises(crypto.UnknownKey):
        crypto.Keyring(NEW_KEY).open(stored, b"state a")
    assert crypto.Keyring(NEW_KEY, KEY).open(stored, b"state a") == b"secret"
    assert crypto.Keyring().seal(b"clear", b"x") == b"clear"


async def test_rows_written_before_0014_are_split_by_a_rotation(conn) -> None:
    body = secret_state()
    await write_version(conn, "s", body, actor="t")
    # as migration 0014 leaves rows written before it: secrets in place, marked ''
    await conn.execute(
        """UPDATE resources SET secrets = '', attributes = $1::jsonb
           WHERE address = 'aws_db_instance.db'""",
        {"password": "hunter2-planted", "engine": "postgres"},
    )
    search = "SELECT count(*) FROM resources WHERE attributes @> $1::jsonb"
    assert await conn.fetchval(search, {"password": "hunter2-planted"}) == 1
    done = await rotate(conn)
    assert done.counts["resources"] == 1
    assert await conn.fetchval(search, {"password": "hunter2-planted"}) == 0
    assert await export_state(conn, "s", actor="t") == json.loads(body)


async def test_a_server_without_the_key_says_why_it_cannot_read(conn, database_url) -> None:
    with crypto.using(crypto.Keyring(KEY)):
        await write_version(conn, "s", secret_state(), actor="t")
    with live_server(database_url) as server:
        async with httpx.AsyncClient() as client:
            response = await client.get(f"{server.url}/states/s")
        assert response.status_code == 503
        assert response.json()["code"] == "ENCRYPTION_KEY"
        assert "INFRAGRAPH_ENCRYPTION_KEY" in response.json()["error"]


@given(state=states())
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@pytest.mark.slow
async def test_generated_states_round_trip_with_a_key(pool, state) -> None:
    body = json.dumps(state).encode()
    name = f"generated/{uuid.uuid4()}"
    with crypto.using(crypto.Keyring(KEY)):
        async with pool.acquire() as connection:
            await write_version(connection, name, body, actor="t")
            exported = await export_state(connection, name, actor="t")
            version = await raw_version(connection, name)
    assert as_numbers(dumps(exported)) == as_numbers(body)
    assert version is not None and version.body == body
