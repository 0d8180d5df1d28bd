# ruff: noqa: E501
"""Hostile load on loopback, bounded in time: twelve heavy queries at once (a
page of 1,000 resources with 200 attributes each, about 10 MB of answer: CPU
to decode, build and encode), while 2,000 connections sit idle. /readyz must
still answer within a second (the health port), the server must stay under
1 GB, every query must be answered right, and idle connections are cut by the
header deadline. Timings are printed (`-s`), not asserted."""

import asyncio
import json
import socket
import time

import httpx
import pytest

from tests.helpers.live_server import free_port, live_server
from tests.helpers.ops import peak_rss
from tests.helpers.states import resource, state

pytestmark = pytest.mark.slow  # starts servers of its own

RESOURCES = 1000
ATTRIBUTES = 200
HEAVY = 12
IDLE = 2000
HEAVY_QUERY = """{ resources(first: 1000, filter: {state: "wide"}) { edges { node {
    address attributes } } } }"""


def wide() -> bytes:
    """RESOURCES instances of ATTRIBUTES nested attributes each."""
    return state(
        [
            resource(
                "terraform_data",
                f"n{i:04d}",
                attributes={
                    f"key_{k}": {"value": f"n{i:04d}-{k}", "index": k} for k in range(ATTRIBUTES)
                },
            )
            for i in range(RESOURCES)
        ]
    )


async def _heavy(client: httpx.AsyncClient) -> dict:
    response = await client.post("/graphql", json={"query": HEAVY_QUERY})
    assert response.status_code == 200
    body = response.json()
    assert "errors" not in body, body.get("errors")
    return body["data"]


def test_heavy_queries_and_idle_connections(database_url) -> None:
    health_port = free_port()
    env = {
        "INFRAGRAPH_HEADER_TIMEOUT_S": "20",
        "INFRAGRAPH_HEALTH_PORT": str(health_port),
        "INFRAGRAPH_POOL_TIMEOUT_S": "120",  # twelve queries, ten connections: the rest queue
    }
    with live_server(database_url, env) as server:
        assert (
            httpx.post(
                f"{server.url}/states/wide",
                content=wide(),
                headers={"Content-Type": "application/json"},
                timeout=120,
            ).status_code
            == 200
        )
        host, port = server.url.removeprefix("http://").split(":")
        idle = [socket.create_connection((host, int(port))) for _ in range(IDLE)]
        try:

            async def scenario() -> tuple[list[dict], list[float]]:
                async with httpx.AsyncClient(
                    base_url=server.url, timeout=300, headers={"Content-Type": "application/json"}
                ) as client:
                    heavy = [asyncio.create_task(_heavy(client)) for _ in range(HEAVY)]
                    ready: list[float] = []
                    health = f"http://{host}:{health_port}"
                    async with httpx.AsyncClient(base_url=health, timeout=1.0) as probe:
                        while not all(task.done() for task in heavy):
                            began = time.perf_counter()
                            async with asyncio.timeout(1.0):  # the limit: an answer within 1 s
                                response = await probe.get("/readyz")
                            assert response.status_code == 200, response.text
                            ready.append(time.perf_counter() - began)
                            await asyncio.sleep(0.5)
                    return await asyncio.gather(*heavy), ready

            began = time.perf_counter()
            answers, ready = asyncio.run(scenario())
            took = time.perf_counter() - began
            rss = peak_rss(server.process.pid)
        finally:
            for sock in idle:
                sock.close()
        assert not server.server_errors(), server.log()
    for data in answers:
        edges = data["resources"]["edges"]
        assert len(edges) == RESOURCES
        assert all(len(e["node"]["attributes"]) == ATTRIBUTES for e in edges)
        assert edges[7]["node"]["attributes"]["key_3"] == {"value": "n0007-3", "index": 3}
    assert len(ready) >= 2
    assert rss < 1 << 30
    print(
        f"\n{HEAVY} queries of {len(json.dumps(answers[0])) >> 20} MiB each"
        f" with {IDLE} idle connections: {took:.1f} s; /readyz {len(ready)} times,"
        f" slowest {max(ready) * 1000:.0f} ms, median {sorted(ready)[len(ready) // 2] * 1000:.0f} ms;"
        f" server peak RSS {rss >> 20} MiB"
    )


def test_idle_connections_are_cut(database_url) -> None:
    with live_server(database_url, {"INFRAGRAPH_HEADER_TIMEOUT_S": "1"}) as server:
        host, port = server.url.removeprefix("http://").split(":")
        idle = [socket.create_connection((host, int(port)), timeout=10) for _ in range(200)]
        try:
            answers = [sock.recv(64) for sock in idle]
        finally:
            for sock in idle:
                sock.close()
        assert not server.server_errors(), server.log()
    assert all(answer.startswith(b"HTTP/1.1 408 ") for answer in answers)
