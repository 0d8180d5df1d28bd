"""OpenTofu's encrypted states on the HTTP backend: stored and served as written, locked,
retried, versioned, mixed with plain versions in one history; look-alikes refused."""

import json

import pytest

from app.errors import BadInput
from app.graph.raw import raw_version
from app.graph.readback import export_state
from tests.helpers.backend import (
    assert_error,
    content_md5,
    events,
    lock,
    lock_info,
    tf_state,
    unlock,
    versions,
)
from tests.helpers.tofu_encryption import altered, tofu

NAME = "team/prod/secrets"
URL = f"/states/{NAME}"


async def _history(conn) -> list[tuple[int, bool, bytes, int]]:
    """Each version's serial, encrypted flag, raw bytes and resource rows."""
    rows = await conn.fetch(
        """SELECT v.serial, v.encrypted,
                  (SELECT count(*) FROM resources r WHERE r.state_id = v.state_id
                   AND r.serial_from <= v.serial
                   AND (r.serial_to IS NULL OR r.serial_to > v.serial)) AS resources
           FROM state_versions v JOIN states s ON s.id = v.state_id
           WHERE s.name = $1 ORDER BY v.serial""",
        NAME,
    )
    history = []
    for r in rows:
        raw = await raw_version(conn, NAME, r["serial"])
        assert raw is not None
        history.append((r["serial"], r["encrypted"], raw.body, r["resources"]))
    return history


async def test_an_encrypted_state_is_stored_and_served_byte_for_byte(client, conn) -> None:
    plain = tf_state(serial=1, value="top secret")
    body = tofu().encrypt(plain)
    response = await client.post(URL, content=body, headers=content_md5(body))
    assert response.status_code == 200, response.text
    assert response.json() == {"name": NAME, "serial": 1, "created": True}
    got = await client.get(URL)
    assert got.status_code == 200
    assert got.content == body
    assert got.headers["content-md5"] == content_md5(body)["Content-MD5"]
    assert tofu().decrypt(got.content) == plain  # what OpenTofu reads back
    # no graph rows: the server did not read inside
    assert await _history(conn) == [(1, True, body, 0)]
    assert await conn.fetchval("SELECT count(*) FROM outputs") == 0
    [write] = await events(conn, NAME)
    assert write["detail"] == {
        "resources": 0,
        "bytes": len(body),
        "encrypted": True,
        **{"added": 0, "changed": 0, "removed": 0},
    }
    with pytest.raises(BadInput, match="encrypted by OpenTofu"):
        await export_state(conn, NAME, actor="test")


async def test_encrypted_writes_go_through_the_lock(client, conn) -> None:
    holder = lock_info(who="tofu@ci")
    assert (await lock(client, holder, URL)).status_code == 200
    body = tofu().encrypt(tf_state(serial=1))
    assert_error(await client.post(URL, content=body), 409, "LOCKED")
    written = await client.post(URL, params={"ID": holder["ID"]}, content=body)
    assert written.status_code == 200, written.text
    assert (await unlock(client, json.dumps(holder).encode(), URL)).json()["unlocked"] is True
    assert [e["action"] for e in await events(conn, NAME)] == ["lock", "write", "unlock"]
    assert (await client.get(URL)).content == body


async def test_a_repeated_post_is_one_version_and_the_serial_rules_hold(client, conn) -> None:
    first = tofu().encrypt(tf_state(serial=4))
    assert (await client.post(URL, content=first)).json()["created"] is True
    retry = await client.post(URL, content=first)
    assert retry.json() == {"name": NAME, "serial": 4, "created": False}
    # the envelope's clear serial and lineage: the same serial sealed again is another
    # body, an older serial or another lineage is refused as for a plain state
    again = await client.post(URL, content=tofu().encrypt(tf_state(serial=4)))
    assert assert_error(again, 409, "CONFLICT")["detail"] == {"current_serial": 4, "serial": 4}
    older = await client.post(URL, content=tofu().encrypt(tf_state(serial=3)))
    assert_error(older, 409, "CONFLICT")
    stranger = await client.post(URL, content=tofu().encrypt(tf_state(5, lineage="other")))
    assert "lineage" in assert_error(stranger, 409, "CONFLICT")["error"]
    assert await versions(conn, NAME) == [4]
    assert [e["action"] for e in await events(conn, NAME)] == ["write"]


def _bare(serial: int) -> bytes:
    """An envelope without the clear serial and lineage (OpenTofu 1.7.0 pre-releases)."""
    envelope = tofu().envelope(tf_state(serial=serial))
    return json.dumps(altered(envelope, {"serial": ..., "lineage": ...})).encode()


async def test_envelopes_without_a_clear_serial_are_numbered_by_arrival(client, conn) -> None:
    await client.post(URL, content=tf_state(serial=7))
    sealed = [_bare(8), _bare(9)]
    for body in sealed:
        assert (await client.post(URL, content=body)).status_code == 200
    retry = await client.post(URL, content=sealed[1])
    assert retry.json() == {"name": NAME, "serial": 9, "created": False}
    assert [(s, e) for s, e, _, _ in await _history(conn)] == [(7, False), (8, True), (9, True)]
    # the state keeps its lineage through them: a plain state of another is refused
    stranger = await client.post(URL, content=tf_state(serial=10, lineage="other"))
    assert "lineage" in assert_error(stranger, 409, "CONFLICT")["error"]
    assert (await client.post(URL, content=tf_state(serial=10))).status_code == 200


async def test_plain_to_encrypted_to_plain_keeps_one_history(client, conn) -> None:
    # OpenTofu's migration: `fallback` to the unencrypted method, then back again
    plain1 = tf_state(serial=1, value="a")
    sealed2 = tofu().encrypt(tf_state(serial=2, value="b"))
    sealed3 = tofu().encrypt(tf_state(serial=3, value="c"))
    plain4 = tf_state(serial=4, value="d")
    for body in (plain1, sealed2, sealed3, plain4):
        response = await client.post(URL, content=body)
        assert response.status_code == 200, response.text
        assert (await client.get(URL)).content == body
    assert await _history(conn) == [
        (1, False, plain1, 1),
        (2, True, sealed2, 0),
        (3, True, sealed3, 0),
        (4, False, plain4, 1),
    ]
    assert [(e["serial"], e["detail"].get("encrypted")) for e in await events(conn, NAME)] == [
        (1, None),
        (2, True),
        (3, True),
        (4, None),
    ]
    assert (await export_state(conn, NAME, actor="test"))["serial"] == 4
    assert (await export_state(conn, NAME, serial=1, actor="test"))["serial"] == 1
    # an encrypted version is never taken for an empty one: the lineage stays fixed
    stranger = await client.post(URL, content=tf_state(serial=5, lineage="other"))
    assert "lineage" in assert_error(stranger, 409, "CONFLICT")["error"]


@pytest.mark.parametrize("clear_fields", [True, False])
async def test_the_first_version_may_be_encrypted_then_decrypted(
    client, conn, clear_fields
) -> None:
    sealed = tofu().encrypt(tf_state(serial=1)) if clear_fields else _bare(1)
    assert (await client.post(URL, content=sealed)).json()["serial"] == 1
    lineage = await conn.fetchval("SELECT lineage FROM states WHERE name = $1", NAME)
    assert lineage == json.loads(sealed).get("lineage")  # None: not known yet
    assert (await client.post(URL, content=tf_state(serial=2))).status_code == 200
    assert [(s, e, n) for s, e, _, n in await _history(conn)] == [(1, True, 0), (2, False, 1)]
    assert await conn.fetchval("SELECT lineage FROM states WHERE name = $1", NAME) == "lineage-1"


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"encrypted_data": ...}, "missing 'encrypted_data' (the ciphertext)"),
        ({"encrypted_data": 12}, "'encrypted_data' must be a base64 string, got an integer"),
        ({"encrypted_data": "***"}, "'encrypted_data' is not base64"),
        ({"meta": "key"}, "'meta' must be an object, got a string"),
        ({"serial": "3"}, "'serial' must be an integer or null, got a string"),
        ({"encryption_version": "v9"}, "unsupported 'encryption_version' 'v9'"),
        ({"outputs": {}}, "unexpected key 'outputs'"),
    ],
)
async def test_malformed_look_alikes_get_400_with_the_reason(client, conn, changes, reason) -> None:
    envelope = altered(tofu().envelope(tf_state(serial=1)), changes)
    response = await client.post(URL, content=json.dumps(envelope).encode())
    error = assert_error(response, 400, "BAD_INPUT")["error"]
    assert error.startswith("not a valid OpenTofu encrypted state: ") and reason in error
    assert await conn.fetchval("SELECT count(*) FROM states") == 0


async def test_other_json_keeps_the_v4_reason(client, conn) -> None:
    response = await client.post(URL, content=b'{"meta": {}, "data": "AAAA"}')
    error = assert_error(response, 400, "BAD_INPUT")["error"]
    assert error == "not a valid Terraform v4 state: missing required field 'version'"
    assert await conn.fetchval("SELECT count(*) FROM states") == 0
