"""GET/POST/DELETE /states/{name}: bytes kept, serial and lineage rules, bad input."""

import hashlib
import json

import pytest

from app.graph.raw import PIECE_BYTES
from tests.helpers.backend import (
    MAX_STATE_BYTES,
    assert_error,
    content_md5,
    events,
    tf_state,
    versions,
)

NAME = "team/prod/network"
URL = f"/states/{NAME}"


async def test_a_missing_state_is_404(client) -> None:
    assert_error(await client.get(URL), 404, "NOT_FOUND")


async def test_get_returns_the_bytes_as_written_with_their_md5(client) -> None:
    body = b'{"version": 4,\n "serial": 1,   "lineage": "L", "resources": [],\n"outputs": {}}\n '
    response = await client.post(URL, content=body, headers=content_md5(body))
    assert response.status_code == 200
    assert response.json() == {"name": NAME, "serial": 1, "created": True}
    got = await client.get(URL)
    assert got.status_code == 200
    assert got.content == body
    assert got.headers["content-md5"] == content_md5(body)["Content-MD5"]


async def test_a_state_bigger_than_a_slice_streams_back_intact(client) -> None:
    # the value is in the attributes and the output: twice half a slice, and some
    filler = "".join(f"{i:08x}" for i in range(PIECE_BYTES // 16 + 5000))
    body = tf_state(value=filler)
    assert PIECE_BYTES < len(body) <= MAX_STATE_BYTES
    assert (await client.post(URL, content=body)).status_code == 200
    got = await client.get(URL)
    assert got.headers["content-length"] == str(len(body))
    assert hashlib.md5(got.content).digest() == hashlib.md5(body).digest()
    assert got.content == body


async def test_serial_never_goes_backwards_and_a_retry_is_harmless(client, conn) -> None:
    assert (await client.post(URL, content=tf_state(serial=5))).status_code == 200
    lower = await client.post(URL, content=tf_state(serial=4, value="b"))
    assert assert_error(lower, 409, "CONFLICT")["detail"] == {"current_serial": 5, "serial": 4}
    assert_error(await client.post(URL, content=tf_state(serial=5, value="b")), 409, "CONFLICT")
    retry = await client.post(URL, content=tf_state(serial=5))
    assert retry.status_code == 200 and retry.json()["created"] is False
    assert await versions(conn, NAME) == [5]
    assert (await client.get(URL)).content == tf_state(serial=5)


async def test_lineage_is_fixed_once_the_state_has_versions(client, conn) -> None:
    await client.post(URL, content=tf_state(serial=1))
    other = await client.post(URL, content=tf_state(serial=2, lineage="lineage-2"))
    assert "lineage" in assert_error(other, 409, "CONFLICT")["error"]
    # an emptied state (what `terraform destroy` leaves) may start a new lineage
    empty = json.dumps({"version": 4, "serial": 2, "lineage": "lineage-1", "resources": []})
    assert (await client.post(URL, content=empty.encode())).status_code == 200
    assert (await client.post(URL, content=tf_state(3, lineage="lineage-2"))).status_code == 200
    assert await versions(conn, NAME) == [1, 2, 3]


async def test_delete_removes_the_state_and_its_history(client, conn) -> None:
    await client.post(URL, content=tf_state(serial=1))
    await client.post(URL, content=tf_state(serial=2))
    response = await client.delete(URL)
    assert response.json() == {"name": NAME, "deleted_versions": 2}
    assert_error(await client.get(URL), 404, "NOT_FOUND")
    assert await conn.fetchval("SELECT count(*) FROM resources") == 0
    # a deleted state starts afresh: any serial, any lineage
    assert (await client.post(URL, content=tf_state(1, lineage="new"))).status_code == 200
    assert [e["action"] for e in await events(conn, NAME)] == ["write", "write", "delete", "write"]
    assert_error(await client.delete("/states/nothing/here"), 404, "NOT_FOUND")


@pytest.mark.parametrize(
    ("body", "headers", "reason"),
    [
        (b"{not json", {}, "not valid JSON"),
        (b"[]", {}, "must be a JSON object"),
        (b'{"version": 3, "serial": 1, "lineage": "L"}', {}, "only version 4"),
        (b'{"version": 4, "lineage": "L"}', {}, "'serial'"),
        (tf_state(), content_md5(b"something else"), "Content-MD5 does not match"),
        (tf_state(), {"Content-MD5": "not base64!"}, "Content-MD5 is not"),
    ],
)
async def test_bad_bodies_get_400_with_the_reason_and_change_nothing(
    client, conn, body, headers, reason
) -> None:
    response = await client.post(URL, content=body, headers=headers)
    assert reason in assert_error(response, 400, "BAD_INPUT")["error"]
    assert await conn.fetchval("SELECT count(*) FROM states") == 0


async def test_a_body_over_the_limit_gets_413_from_its_length(client, conn) -> None:
    big = b" " * (MAX_STATE_BYTES + 1)
    assert_error(await client.post(URL, content=big), 413, "LIMIT_EXCEEDED")

    async def chunks():  # no Content-Length: refused while it streams in
        for _ in range(MAX_STATE_BYTES // 65536 + 2):
            yield b" " * 65536

    assert_error(await client.post(URL, content=chunks()), 413, "LIMIT_EXCEEDED")
    assert await conn.fetchval("SELECT count(*) FROM states") == 0


async def test_unknown_methods_and_bad_names_get_json_errors(client) -> None:
    response = await client.put(URL, content=tf_state())
    assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert "POST" in response.headers["allow"]
    assert_error(await client.get("/states/"), 400, "BAD_INPUT")
    assert_error(await client.get("/states/a%01b"), 400, "BAD_INPUT")
    assert_error(await client.get("/states/" + "x" * 513), 400, "BAD_INPUT")
    bad_id = await client.post(URL, params={"ID": "a\x00b"}, content=tf_state())
    assert_error(bad_id, 400, "BAD_INPUT")
