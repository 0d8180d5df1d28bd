"""A whole-state LOCK beside leases on the cluster: refused while a lease is live, taken
once an expired one is reaped, and withdrawn when a lease acquired while it was taken
is found after (app/leases/store.py, lock_whole)."""

import json
from typing import Any
from uuid import UUID

import asyncpg
import httpx
import pytest

from app.graph import locks
from app.leases import store
from tests.helpers.citus_cluster import citus_url, cluster_database, serving
from tests.helpers.citus_workload import network

pytestmark = [pytest.mark.citus, pytest.mark.slow]

NAME = "team/net"
URL = f"/states/{NAME}"


def _lock(lock_id: str) -> bytes:
    return json.dumps({"ID": lock_id, "Operation": "OperationTypeApply", "Who": "ci"}).encode()


async def _lease(conn: asyncpg.Connection, state_id: UUID, expires: str) -> str:
    """A lease of the state's aws_vpc.main, as acquire leaves it (`expires`: an interval
    from now)."""
    lease_id = await conn.fetchval(
        """INSERT INTO leases (id, state_id, holder, base_serial, addresses, outputs,
                               ttl_seconds, expires_at)
           VALUES (gen_random_uuid(), $1, 'boot', 1, '{aws_vpc.main}', '{}', 600,
                   now() + $2::text::interval)
           RETURNING id""",
        state_id,
        expires,
    )
    return str(lease_id)


async def _events(conn: asyncpg.Connection) -> list[tuple[str, Any]]:
    records = await conn.fetch(
        "SELECT action, detail FROM events WHERE state_name = $1 ORDER BY created_at", NAME
    )
    return [(r["action"], r["detail"]) for r in records]


async def test_a_lock_beside_leases_on_the_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    async with cluster_database(citus_url()) as database, serving(database) as (app, client):
        assert (await client.post(URL, content=network(1, 2))).status_code == 200
        async with app.state.pool.acquire() as conn:
            state_id = await conn.fetchval("SELECT id FROM states WHERE name = $1", NAME)

            live = await _lease(conn, state_id, "10 minutes")
            refused = await client.request("LOCK", URL, content=_lock("l1"))
            assert refused.status_code == 409 and refused.json()["ID"] == live

            await conn.execute("UPDATE leases SET expires_at = now() - interval '1 second'")
            assert (await client.request("LOCK", URL, content=_lock("l1"))).status_code == 200
            assert await conn.fetchval("SELECT count(*) FROM leases") == 0
            unlocked = await client.request("UNLOCK", URL, content=_lock("l1"))
            assert unlocked.json()["unlocked"] is True

            # A lease acquired after the LOCK's first statement began (as by an acquire
            # that held the state's row while the LOCK waited for it)
            raced: list[str] = []
            take = locks.take

            async def taken_then_leased(*args: Any, **kwargs: Any) -> locks.Taken:
                outcome = await take(*args, **kwargs)
                raced.append(await _lease(conn, state_id, "10 minutes"))
                return outcome

            monkeypatch.setattr(store.locks, "take", taken_then_leased)
            withdrawn = await client.request("LOCK", URL, content=_lock("l2"))
            assert withdrawn.status_code == 409, withdrawn.text
            assert withdrawn.json()["ID"] == raced[0]
            assert await conn.fetchval("SELECT count(*) FROM state_locks") == 0
            actions = await _events(conn)
    assert [a for a, _ in actions if a in ("lock", "unlock", "lease-expired")] == [
        "lease-expired",
        "lock",
        "unlock",
        "lock",
        "unlock",
    ]
    assert actions[-1][1]["withdrawn"] == {"leases": raced}


async def test_a_lock_of_a_new_state_on_the_cluster() -> None:
    """The first LOCK makes the state (no id to name before): taken, and released."""
    async with cluster_database(citus_url()) as database, serving(database) as (_, client):
        response: httpx.Response = await client.request("LOCK", URL, content=_lock("l1"))
        assert response.status_code == 200, response.text
        again = await client.request("LOCK", URL, content=_lock("l1"))
        assert again.status_code == 200  # a LOCK retried
        assert (await client.request("UNLOCK", URL, content=_lock("l1"))).json()["unlocked"]
