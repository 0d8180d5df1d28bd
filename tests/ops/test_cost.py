# ruff: noqa: E501 - queries read best on one line
"""The cost limit against a reader who asks for the most a query can cost, through the
real server: answers that repeat big JSON fields, big diffs, many walks. Each is refused
with LIMIT_EXCEEDED and its figure, and the server's memory stays bounded (its peak RSS,
read from /proc, reset before each attack)."""

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.config import Settings
from tests.helpers.backend import lock_info
from tests.helpers.live_server import LiveServer, live_server
from tests.helpers.ops import ADMIN, MIB, peak_rss
from tests.helpers.states import resource, state

pytestmark = pytest.mark.slow  # starts servers of its own

# What one attack may add to the server's peak RSS: the answer limit (64 MiB, counted, never built), what the
# query loads from the database, its thousands of pending resolvers, the allocator's
# slack; unmetered, the attacks built 0.5 to 1.2 GB. And the server's RSS, at most.
GROWTH = 256 * MIB
MAX_RSS = 512 * MIB


def reset_peak(pid: int) -> int:
    """Reset the peak RSS to the current RSS (Linux: clear_refs 5); the new peak."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return peak_rss(pid)


@pytest.fixture(scope="module")
def server(own_database: str) -> Iterator[LiveServer]:
    with live_server(own_database, {"INFRAGRAPH_API_TOKENS": f"admin:{ADMIN}"}) as running:
        yield running
        assert not running.server_errors(), running.log()


def _client(server: LiveServer, secret: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=server.url, timeout=120, headers={"Authorization": f"Bearer {secret}"}
    )


async def _write(admin: httpx.AsyncClient, name: str, body: bytes) -> None:
    response = await admin.post(
        f"/states/{name}", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200, response.text


@pytest.fixture(scope="module")
async def reader(server: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    """A read token's client, over the attacks' data: 200 states locked with 60 KB of
    Info each, a state whose two versions differ in 1,000 resources of 5 KB, a state of
    24 MB of attributes, and a chain of states linked through terraform_remote_state."""
    async with _client(server, ADMIN) as admin:
        create = 'mutation { createToken(name: "reader", role: READ) { secret } }'
        response = await admin.post("/graphql", json={"query": create})
        secret = response.json()["data"]["createToken"]["secret"]

        async def locked(i: int) -> None:
            info = {**lock_info(), "Info": "i" * 60_000}
            response = await admin.request("LOCK", f"/states/locked/{i:03}", json=info)
            assert response.status_code == 200, response.text

        for start in range(0, 200, 20):
            await asyncio.gather(*(locked(i) for i in range(start, start + 20)))
        for serial, fill in ((1, "a"), (2, "b")):
            resources = [
                resource("terraform_data", f"r{i}", attributes={"blob": fill * 5_000})
                for i in range(1_000)
            ]
            await _write(admin, "diffed", state(resources, serial=serial))
        resources = [
            resource("terraform_data", f"r{i}", attributes={"blob": "z" * 24_000})
            for i in range(1_000)
        ]
        await _write(admin, "big", state(resources))
    async with _client(server, secret) as client:
        yield client


async def _attack(server: LiveServer, client: httpx.AsyncClient, query: str) -> dict[str, Any]:
    """The one error of `query`'s answer, checking the server's peak RSS grew by less than
    GROWTH meanwhile."""
    pid = server.process.pid
    before = reset_peak(pid)
    response = await client.post("/graphql", json={"query": query})
    grown = peak_rss(pid) - before
    assert grown < GROWTH, f"the peak RSS grew by {grown // MIB} MiB"
    assert before + grown < MAX_RSS, f"the peak RSS was {(before + grown) // MIB} MiB"
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["data"] is None, str(body)[:500]
    [error] = body["errors"]
    assert error["extensions"]["code"] == "LIMIT_EXCEEDED", error
    return dict(error)


def aliases(count: int, field: str) -> str:
    """`count` aliases of `field`, $i in it the alias' number from 1."""
    return "{ " + " ".join(f"a{i}: {field.replace('$i', str(i + 1))}" for i in range(count)) + " }"


LOCKS = aliases(100, "states(first: 200) { edges { node { lock { info } } } }")


async def test_repeated_lock_info_is_stopped_then_refused_before_it_runs(server, reader) -> None:
    first = await _attack(server, reader, LOCKS)
    assert first["extensions"]["detail"]["max"] == Settings.max_answer_bytes
    assert first["extensions"]["detail"]["bytes"] > 16 * MIB
    # measured once, the lock infos' size is kept: the same query is refused before it runs
    again = await _attack(server, reader, LOCKS)
    assert "estimated" in again["message"]
    assert again["extensions"]["detail"]["bytes"] > 100 * 200 * 50_000


async def test_a_repeated_version_diff_is_stopped(server, reader) -> None:
    query = aliases(
        100,
        'state(name: "diffed") { currentVersion { diff(against: 1) { added removed changed { address changes { path old new } } } } }',
    )
    error = await _attack(server, reader, query)
    assert error["extensions"]["detail"]["max"] == Settings.max_answer_bytes


async def test_repeated_attributes_of_a_big_state_are_stopped(server, reader) -> None:
    query = aliases(
        20, 'resources(first: 1000, filter: {state: "big"}) { edges { node { attributes } } }'
    )
    error = await _attack(server, reader, query)
    assert error["extensions"]["detail"]["max"] == Settings.max_answer_bytes


WALKS = aliases(
    50,
    'blastRadius(state: "diffed", address: "terraform_data.r1", crossStates: true, maxDepth: $i) { totalCount }',
)


async def test_many_walks_across_states_are_refused_before_they_run(server, reader) -> None:
    body = (await reader.post("/graphql", json={"query": WALKS})).json()
    [error] = body["errors"]
    assert error["extensions"]["code"] == "LIMIT_EXCEEDED"
    assert error["extensions"]["detail"]["nodes"] >= 50 * 2_500


async def test_parallel_walks_leave_the_pool_to_others(server, reader) -> None:
    async def other() -> float:
        async with _client(server, ADMIN) as admin:
            started = time.monotonic()
            response = await admin.post("/graphql", json={"query": "{ states { totalCount } }"})
            assert "errors" not in response.json(), response.text
            return time.monotonic() - started

    async def walks() -> dict[str, Any]:
        return dict((await reader.post("/graphql", json={"query": WALKS})).json())

    *answers, waited = await asyncio.gather(*(walks() for _ in range(4)), other())
    for answer in answers:
        assert answer["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED"
    assert waited < 2.0


async def test_a_token_spends_its_budget_then_waits(database_url: str) -> None:
    env = {
        "INFRAGRAPH_API_TOKENS": f"admin:{ADMIN},other:other-secret",
        "INFRAGRAPH_TOKEN_BUDGET": "1000",
        "INFRAGRAPH_TOKEN_BUDGET_SECONDS": "3600",
    }
    query = "{ states(first: 300) { edges { node { name } } } }"  # 300 nodes
    with live_server(database_url, env) as server:
        async with _client(server, ADMIN) as admin, _client(server, "other-secret") as other:
            for _ in range(3):
                body = (await admin.post("/graphql", json={"query": query})).json()
                assert "errors" not in body, body
            body = (await admin.post("/graphql", json={"query": query})).json()
            [error] = body["errors"]
            assert error["extensions"]["code"] == "LIMIT_EXCEEDED"
            detail = error["extensions"]["detail"]
            assert detail["budget"] == 1000 and detail["units"] == 300 and detail["left"] < 300
            assert detail["retryAfter"] > 0
            # another token has its own
            assert "errors" not in (await other.post("/graphql", json={"query": query})).json()
        assert not server.server_errors(), server.log()
