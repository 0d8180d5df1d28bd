"""Leases through the real server: acquired from a plan (LEASE_CONFLICT, STALE_PLAN), the
http backend under `?lease=ID` (snapshot GET, merged POST, conflicts with nothing
written), the whole-state writer lock and leases excluding each other, release, TTL."""

import asyncio
import json
from typing import Any

import asyncpg
import httpx
import pytest

from app import db
from tests.helpers.backend import TOKENS, assert_error, events, http_client, lock_info, versions
from tests.helpers.graphql_ws import events as delivered
from tests.helpers.graphql_ws import subscribe
from tests.helpers.lease_plans import address, plan_doc, state_doc
from tests.helpers.live_server import LiveServer
from tests.helpers.waiting import until_waiting_on

NAME = "team/leased"
URL = f"/states/{NAME}"
BASE = {"a": "a0", "b": "b0", "c": "c0"}
ACQUIRE = """mutation($state: String!, $plan: JSON!, $ttl: Int!, $serial: Int) {
  acquireLease(state: $state, plan: $plan, ttlSeconds: $ttl, serial: $serial) {
    id holder baseSerial addresses outputs env } }"""
RELEASE = """mutation($id: ID!) { releaseLease(id: $id) { id } }"""
STATE = """query($name: String!) { state(name: $name) {
  leases { id lockId writes } locks { id operation } } }"""


async def gql(client: httpx.AsyncClient, query: str, **variables: Any) -> dict[str, Any]:
    response = await client.post("/graphql", json={"query": query, "variables": variables})
    body: dict[str, Any] = response.json()
    return body


async def acquire(
    client: httpx.AsyncClient, changed: dict[str, str], *, ttl: int = 600, **extra: Any
) -> dict[str, Any]:
    plan = plan_doc(extra.pop("prior", BASE), changed, extra.pop("outputs", ()))
    return await gql(client, ACQUIRE, state=NAME, plan=plan, ttl=ttl, serial=extra.get("serial"))


async def lease_of(client: httpx.AsyncClient, changed: dict[str, str]) -> str:
    body = await acquire(client, changed)
    assert "errors" not in body, body
    lease_id: str = body["data"]["acquireLease"]["id"]
    return lease_id


async def based(client: httpx.AsyncClient) -> None:
    assert (await client.post(URL, content=state_doc(1, BASE))).is_success


async def head(client: httpx.AsyncClient) -> dict[str, Any]:
    document: dict[str, Any] = (await client.get(URL)).json()
    return document


def inputs(document: dict[str, Any]) -> dict[str, str]:
    return {r["name"]: r["instances"][0]["attributes"]["input"] for r in document["resources"]}


async def test_an_overlap_or_a_stale_plan_is_refused(
    client: httpx.AsyncClient, conn: asyncpg.Connection
) -> None:
    await based(client)
    first = await acquire(client, {"a": "a1"}, outputs=("o",))
    lease = first["data"]["acquireLease"]
    assert (lease["addresses"], lease["outputs"], lease["baseSerial"]) == (
        [address("a")],
        ["o"],
        1,
    )
    assert lease["env"]["TF_HTTP_ADDRESS"].endswith(f"{URL}?lease={lease['id']}")

    overlap = await acquire(client, {"a": "a2", "b": "b2"})
    error = overlap["errors"][0]
    assert error["extensions"]["code"] == "LEASE_CONFLICT"
    assert error["extensions"]["detail"]["addresses"] == [address("a")]
    assert error["extensions"]["detail"]["leases"] == [
        {"lease": lease["id"], "holder": "tf", "addresses": [address("a")]}
    ]
    assert lease["id"] in error["message"] and "'tf'" in error["message"]
    output_overlap = await acquire(client, {"c": "c1"}, outputs=("o",))
    assert output_overlap["errors"][0]["extensions"]["detail"]["addresses"] == ["output.o"]

    stale_serial = await acquire(client, {"b": "b1"}, serial=0)
    assert stale_serial["errors"][0]["extensions"]["code"] == "STALE_PLAN"
    other_prior = await acquire(client, {"b": "b1"}, prior={"a": "a0", "b": "b0"})
    assert other_prior["errors"][0]["extensions"]["code"] == "STALE_PLAN"

    live = await conn.fetch("SELECT id::text FROM leases")
    assert [r["id"] for r in live] == [lease["id"]]
    assert await conn.fetchval("SELECT count(*) FROM lease_footprints") == 2
    actions = [e["action"] for e in await events(conn, NAME)]
    assert actions.count("lease-acquired") == 1 and actions.count("lease-conflict") == 2


async def test_the_footprints_exclusion_constraint_holds_without_the_check(
    client: httpx.AsyncClient, conn: asyncpg.Connection
) -> None:
    await based(client)
    await lease_of(client, {"a": "a1"})
    state_id = await conn.fetchval("SELECT state_id FROM leases")
    other = await conn.fetchval(
        """INSERT INTO leases (id, state_id, holder, base_serial, addresses, outputs,
                               ttl_seconds, expires_at)
           VALUES (gen_random_uuid(), $1, 'x', 1, '{}', '{}', 60, now() + interval '1 minute')
           RETURNING id""",
        state_id,
    )
    with pytest.raises(asyncpg.ExclusionViolationError):
        await conn.execute(
            "INSERT INTO lease_footprints VALUES ($1, $2, $3)", other, state_id, address("a")
        )
    assert await conn.fetchval("SELECT count(*) FROM lease_footprints") == 1


async def test_the_writer_lock_and_leases_exclude_each_other(
    client: httpx.AsyncClient, conn: asyncpg.Connection
) -> None:
    await based(client)
    lease_id = await lease_of(client, {"a": "a1"})
    refused = await client.request("LOCK", URL, content=json.dumps(lock_info("apply-1")))
    body = assert_error(refused, 409, "LOCKED")
    assert body["ID"] == lease_id and body["Leases"][0]["addresses"] == [address("a")]
    shared = {**lock_info("plan-1"), "Operation": "OperationTypePlan"}
    assert (await client.request("LOCK", URL, content=json.dumps(shared))).is_success

    assert "errors" not in await gql(client, RELEASE, id=lease_id)
    assert (await client.request("LOCK", URL, content=json.dumps(lock_info("apply-1")))).is_success
    while_locked = await acquire(client, {"b": "b1"})
    error = while_locked["errors"][0]
    assert error["extensions"]["code"] == "LEASE_CONFLICT"
    assert error["extensions"]["detail"]["lock"]["ID"] == "apply-1"
    state = (await gql(client, STATE, name=NAME))["data"]["state"]
    assert [(x["id"], x["operation"]) for x in state["locks"]] == [
        ("apply-1", "OperationTypeApply"),
        ("plan-1", "OperationTypePlan"),
    ]
    assert state["leases"] == []


async def test_a_lock_that_waited_on_an_acquire_is_refused_by_its_lease(
    client: httpx.AsyncClient, conn: asyncpg.Connection, pool: db.Pool
) -> None:
    """A LOCK that waits for the state's row while a lease is acquired (the acquire holds
    it) sees that lease once acquired: refused, and no lock left."""
    await based(client)
    state_id = await conn.fetchval("SELECT id FROM states WHERE name = $1", NAME)
    async with pool.acquire() as acquiring:
        async with acquiring.transaction():  # what acquire does, holding the state's row
            await acquiring.execute("SELECT id FROM states WHERE id = $1 FOR UPDATE", state_id)
            body = json.dumps(lock_info("apply-1"))
            locking = asyncio.create_task(client.request("LOCK", URL, content=body))
            await until_waiting_on(conn, {"transactionid"})
            lease_id = await acquiring.fetchval(
                """INSERT INTO leases (id, state_id, holder, base_serial, addresses, outputs,
                                       ttl_seconds, expires_at)
                   VALUES (gen_random_uuid(), $1, 'tf', 1, $2, '{}', 600,
                           now() + interval '10 minutes')
                   RETURNING id""",
                state_id,
                [address("a")],
            )
        refused = await locking
    body = assert_error(refused, 409, "LOCKED")
    assert body["ID"] == str(lease_id) and body["Leases"][0]["addresses"] == [address("a")]
    assert await conn.fetchval("SELECT count(*) FROM state_locks") == 0
    lock, withdrawn = (await events(conn, NAME))[-2:]  # taken before the lease was seen
    assert (lock["action"], withdrawn["action"]) == ("lock", "unlock")
    assert withdrawn["detail"]["withdrawn"] == {"leases": [str(lease_id)]}
    # a lease first, then a whole-state lock: never both
    assert (
        await client.request("LOCK", URL, content=json.dumps(lock_info("apply-2")))
    ).status_code == 409


async def test_a_lock_reaps_an_expired_lease_and_is_taken(
    client: httpx.AsyncClient, conn: asyncpg.Connection
) -> None:
    await based(client)
    lease_id = await lease_of(client, {"a": "a1"})
    await conn.execute("UPDATE leases SET expires_at = now() - interval '1 second'")
    assert (await client.request("LOCK", URL, content=json.dumps(lock_info("apply-1")))).is_success
    assert await conn.fetchval("SELECT count(*) FROM leases") == 0
    reaped, locked = (await events(conn, NAME))[-2:]
    assert (reaped["action"], reaped["detail"]["lease"]) == ("lease-expired", lease_id)
    assert (locked["action"], locked["detail"]["id"]) == ("lock", "apply-1")


async def test_writes_under_leases_are_merged(
    client: httpx.AsyncClient, conn: asyncpg.Connection
) -> None:
    await based(client)
    original = (await client.get(URL)).content
    lease_a = await lease_of(client, {"a": "a1"})
    lease_b = await lease_of(client, {"b": "b1"})
    under_a, under_b = {"lease": lease_a}, {"lease": lease_b}
    assert (await client.get(URL, params=under_a)).content == original  # the snapshot

    locked = await client.request(
        "LOCK", f"{URL}/lock", params=under_a, content=json.dumps(lock_info("tf-a"))
    )
    assert locked.is_success
    assert (
        await client.request(
            "LOCK", f"{URL}/lock", params=under_b, content=json.dumps(lock_info("tf-b"))
        )
    ).is_success
    state = (await gql(client, STATE, name=NAME))["data"]["state"]
    assert sorted(x["lockId"] for x in state["leases"]) == ["tf-a", "tf-b"]

    wrote_a = await client.post(
        URL, params={**under_a, "ID": "tf-a"}, content=state_doc(2, {**BASE, "a": "a1"})
    )
    assert wrote_a.json()["serial"] == 2 and wrote_a.json()["merged"] == [address("a")]
    mine_b = state_doc(2, {**BASE, "b": "b1"})
    wrote_b = await client.post(URL, params={**under_b, "ID": "tf-b"}, content=mine_b)
    assert wrote_b.json()["serial"] == 3
    assert inputs(await head(client)) == {"a": "a1", "b": "b1", "c": "c0"}
    assert (await client.get(URL, params=under_b)).content == mine_b  # its own view
    retried = await client.post(URL, params={**under_b, "ID": "tf-b"}, content=mine_b)
    assert retried.json()["created"] is False and await versions(conn, NAME) == [1, 2, 3]

    # outside its footprint, untouched by others: accepted, and said so on the event
    outside = state_doc(3, {**BASE, "b": "b1", "c": "c1"})
    wrote_c = await client.post(URL, params={**under_b, "ID": "tf-b"}, content=outside)
    assert wrote_c.json()["outside"] == [address("c")]
    merged = [e for e in await events(conn, NAME) if e["action"] == "lease-merged"]
    assert [e["detail"]["outside"] for e in merged] == [[], [], [address("c")]]

    # another writer changes `b` (a -lock=false push): B's next change of it is refused
    pushed = json.loads(state_doc(5, {"a": "a1", "b": "pushed", "c": "c1"}))
    assert (await client.post(URL, content=json.dumps(pushed))).is_success
    before = await versions(conn, NAME)
    refused = await client.post(
        URL,
        params={**under_b, "ID": "tf-b"},
        content=state_doc(4, {**BASE, "b": "b2", "c": "c1"}),
    )
    body = assert_error(refused, 409, "LEASE_CONFLICT")
    assert body["detail"]["addresses"] == [address("b")]
    assert await versions(conn, NAME) == before  # nothing written
    assert (await events(conn, NAME))[-1]["action"] == "lease-conflict"

    # Terraform's UNLOCK ends the lease
    unlocked = await client.request(
        "UNLOCK", f"{URL}/lock", params=under_a, content=json.dumps(lock_info("tf-a"))
    )
    assert unlocked.is_success
    assert await conn.fetchval("SELECT count(*) FROM leases") == 1
    ended = await client.get(URL, params=under_a)
    assert_error(ended, 409, "CONFLICT")


async def test_only_the_holder_uses_a_lease_an_admin_force_releases_it(
    server: LiveServer, client: httpx.AsyncClient, conn: asyncpg.Connection
) -> None:
    await based(client)
    lease_id = await lease_of(client, {"a": "a1"})
    async with http_client(server, ("ci", TOKENS["ci"])) as other:
        refused = await other.get(URL, params={"lease": lease_id})
        assert_error(refused, 403, "FORBIDDEN")
        assert "errors" not in await gql(other, RELEASE, id=lease_id)
    released = (await events(conn, NAME))[-1]
    assert released["action"] == "lease-released"
    assert (released["detail"]["how"], released["actor"]) == ("force-release", "ci")


async def test_a_lease_expires_after_its_ttl(
    client: httpx.AsyncClient, conn: asyncpg.Connection
) -> None:
    await based(client)
    body = await acquire(client, {"a": "a1"}, ttl=1)
    lease_id = body["data"]["acquireLease"]["id"]
    renewed = await client.get(URL, params={"lease": lease_id})
    assert renewed.is_success
    await asyncio.sleep(1.5)
    assert_error(await client.get(URL, params={"lease": lease_id}), 409, "CONFLICT")
    assert (await gql(client, STATE, name=NAME))["data"]["state"]["leases"] == []
    again = await lease_of(client, {"a": "a2"})
    gone = [e for e in await events(conn, NAME) if e["action"] == "lease-expired"]
    assert [e["detail"]["lease"] for e in gone] == [lease_id] and again != lease_id


async def test_lease_events_reach_the_subscription(
    server: LiveServer, client: httpx.AsyncClient, conn: asyncpg.Connection
) -> None:
    await based(client)
    bearer = {"Authorization": f"Bearer {TOKENS['tf']}"}
    async with subscribe(server.url, {"state": NAME}, token=TOKENS["tf"], headers=bearer) as ws:
        lease_id = await lease_of(client, {"a": "a1"})
        refused = await acquire(client, {"a": "a2"})
        assert refused["errors"][0]["extensions"]["code"] == "LEASE_CONFLICT"
        wrote = await client.post(
            URL, params={"lease": lease_id}, content=state_doc(2, {**BASE, "a": "a1"})
        )
        assert wrote.is_success
        assert "errors" not in await gql(client, RELEASE, id=lease_id)
        seen = await delivered(ws, 5)
    assert [e["action"] for e in seen] == [
        "lease-acquired",
        "lease-conflict",
        "write",
        "lease-merged",
        "lease-released",
    ]
    assert {e["detail"]["lease"] for e in seen if e["action"] != "lease-conflict"} == {lease_id}
