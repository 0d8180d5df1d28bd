"""LOCK/UNLOCK: who holds the lock, what a held lock refuses, force-unlock, events."""

import json

import pytest

from tests.helpers.backend import (
    TOKENS,
    assert_error,
    content_md5,
    events,
    http_client,
    lock,
    lock_info,
    tf_state,
    unlock,
    versions,
)

NAME = "team/prod/network"
URL = f"/states/{NAME}"


@pytest.mark.parametrize("url", [URL, f"{URL}/lock"])
async def test_a_lock_is_held_until_its_holder_unlocks(client, conn, url) -> None:
    alice, bob = lock_info(who="alice@laptop"), lock_info(who="bob@ci")
    # the first apply locks a state that does not exist yet
    assert (await lock(client, alice, url)).status_code == 200
    assert_error(await client.get(URL), 404, "NOT_FOUND")

    refused = await lock(client, bob, url)
    holder = assert_error(refused, 409, "LOCKED")
    assert {k: holder[k] for k in alice} == alice  # Terraform reads the holder's LockInfo
    assert (await lock(client, alice, url)).status_code == 200  # a retried LOCK

    other = await unlock(client, json.dumps(bob).encode(), url)
    assert assert_error(other, 409, "LOCKED")["ID"] == alice["ID"]
    released = await unlock(client, json.dumps(alice).encode(), url)
    assert released.json() == {"name": NAME, "unlocked": True}
    assert (await lock(client, bob, url)).status_code == 200
    assert [(e["action"], e["actor"], e["detail"]["who"]) for e in await events(conn, NAME)] == [
        ("lock", "tf", "alice@laptop"),
        ("unlock", "tf", "alice@laptop"),
        ("lock", "tf", "bob@ci"),
    ]


async def test_a_write_needs_the_holders_id_while_locked(client, conn) -> None:
    holder = lock_info()
    await lock(client, holder, URL)
    assert_error(await client.post(URL, content=tf_state(1)), 409, "LOCKED")
    refused = await client.post(URL, params={"ID": "someone-else"}, content=tf_state(1))
    assert assert_error(refused, 409, "LOCKED")["Who"] == holder["Who"]
    assert (await client.post(URL, params={"ID": holder["ID"]}, content=tf_state(1))).is_success
    assert_error(await client.delete(URL), 409, "LOCKED")

    await unlock(client, json.dumps(holder).encode(), URL)
    # with no lock held, writes go through (`-lock=false`), with or without an ID
    assert (await client.post(URL, content=tf_state(2))).is_success
    assert (await client.post(URL, params={"ID": holder["ID"]}, content=tf_state(3))).is_success
    assert await versions(conn, NAME) == [1, 2, 3]
    write = next(e for e in await events(conn, NAME) if e["action"] == "write")
    assert write["detail"]["lock"] == holder["ID"]


async def test_delete_with_the_holders_id_removes_the_lock_too(client, conn) -> None:
    holder = lock_info()
    await lock(client, holder, URL)
    await client.post(URL, params={"ID": holder["ID"]}, content=tf_state(1))
    assert (await client.delete(URL, params={"ID": holder["ID"]})).is_success
    assert await conn.fetchval("SELECT count(*) FROM state_locks") == 0


async def test_force_unlock_with_an_empty_body_releases_any_lock(client, conn) -> None:
    stale = lock_info(who="crashed@runner")
    await lock(client, stale, URL)
    response = await unlock(client, b"", URL)  # `terraform force-unlock`
    assert response.json()["unlocked"] is True
    assert (await lock(client, lock_info(), URL)).status_code == 200
    force = (await events(conn, NAME))[1]
    assert force["action"] == "force-unlock" and force["actor"] == "tf"
    assert force["detail"] == {
        "id": stale["ID"],
        "who": "crashed@runner",
        "operation": "OperationTypeApply",
        "holder": "tf",
    }


async def test_opentofu_force_unlock_names_the_lock_by_id(server, client, conn) -> None:
    """Its holder releases it (an unlock); another admin force-unlocks it."""
    only_id = {**dict.fromkeys(lock_info(), ""), "Created": "0001-01-01T00:00:00Z"}
    async with http_client(server, ("ci", TOKENS["ci"])) as other_admin:
        for releaser in (client, other_admin):
            stale = lock_info()
            await lock(client, stale, URL)
            # OpenTofu marshals a LockInfo holding nothing but the ID
            wrong = await unlock(releaser, json.dumps({**only_id, "ID": "not-it"}).encode(), URL)
            assert assert_error(wrong, 409, "LOCKED")["ID"] == stale["ID"]
            named = json.dumps({**only_id, "ID": stale["ID"]}).encode()
            assert (await unlock(releaser, named, URL)).is_success
    assert [(e["action"], e["actor"]) for e in await events(conn, NAME)] == [
        ("lock", "tf"),
        ("unlock", "tf"),
        ("lock", "tf"),
        ("force-unlock", "ci"),
    ]


async def test_unlocking_what_is_not_locked_is_harmless(client, conn) -> None:
    response = await unlock(client, json.dumps(lock_info()).encode(), URL)
    assert response.json() == {"name": NAME, "unlocked": False}
    assert await events(conn, NAME) == []


@pytest.mark.parametrize(
    ("method", "body", "status", "reason"),
    [
        ("LOCK", b"", 400, "not valid JSON"),
        ("LOCK", b"{oops", 400, "not valid JSON"),
        ("LOCK", b'["ID"]', 400, "JSON object"),
        ("LOCK", b'{"Who": "me"}', 400, "'ID'"),
        ("LOCK", b'{"ID": 7}', 400, "'ID'"),
        ("UNLOCK", b'{"Who": "me"}', 400, "'ID'"),
        ("LOCK", b'{"ID": "x", "Who": "nul\\u0000"}', 400, "U+0000"),
        ("LOCK", json.dumps({"ID": "x", "Info": "x" * 70_000}).encode(), 413, "limit"),
    ],
)
async def test_bad_lock_bodies_are_refused(client, conn, method, body, status, reason) -> None:
    response = await client.request(method, URL, content=body)
    code = "BAD_INPUT" if status == 400 else "LIMIT_EXCEEDED"
    assert reason in assert_error(response, status, code)["error"]
    assert await conn.fetchval("SELECT count(*) FROM state_locks") == 0


async def test_a_lock_body_must_match_its_content_md5(client) -> None:
    body = json.dumps(lock_info()).encode()
    response = await client.request("LOCK", URL, content=body, headers=content_md5(b"other"))
    assert_error(response, 400, "BAD_INPUT")
