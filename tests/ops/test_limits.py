# ruff: noqa: E501 - queries read best on one line
"""Limits that bound what one request may cost: the query cost limit (refused
before anything runs), the /graphql body limit, the answer ceiling, header
size/count and timeouts, and the cap on concurrent large state writes."""

import asyncio
import json
import select
import socket
import time
from collections.abc import Awaitable, Callable

import httpx
import pytest

from app.api.runtime.limits import MAX_NODES
from app.graph.write.version import write_version
from app.jsonutil import dumps
from bench.generate import generate_state
from tests.helpers.graphql import error_codes, post
from tests.helpers.live_server import live_server, requests_in_flight
from tests.helpers.states import resource, state
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.slow  # starts servers of its own

FAN_OUT = "{ resources(first: 1000) { edges { node { dependents(first: 1000) { edges { node { address } } } } } } }"


def dense(count: int) -> bytes:
    """`count` instances, each depending on every other one's resource."""
    names = [f"n{i}" for i in range(count)]
    return state(
        [
            resource("terraform_data", name, depends_on=[f"terraform_data.{n}" for n in names[:50]])
            for name in names
        ]
    )


async def test_the_nested_fan_out_is_refused_before_it_runs(client, conn, statements) -> None:
    await write_version(conn, "dense", dense(1000), actor="test")
    statements.statements.clear()
    body = await post(client, FAN_OUT)
    [error] = body["errors"]
    assert error["extensions"]["code"] == "LIMIT_EXCEEDED"
    assert error["extensions"]["detail"] == {"nodes": 1_001_000, "max": MAX_NODES}
    assert "1001000" in error["message"]
    assert statements.statements == []  # nothing ran


@pytest.mark.parametrize(
    ("query", "variables", "nodes"),
    [
        ("query($n: Int) { resources(first: $n) { edges { node { address } } } }", {"n": 7}, 7),
        ("query($n: Int = 9) { resources(first: $n) { edges { node { address } } } }", {}, 9),
        ("{ resources { totalCount } }", {}, 0),  # no edges: no items
        ("{ resources { edges { node { dependencies { edges { node { address } } } } } } }", {}, 100 + 100 * 100),
        ("{ ...F } fragment F on Query { states(first: 3) { edges { node { name } } } }", {}, 3),
        ("{ scopes { tables { columns { id } } } }", {}, 10 + 100 + 1000),
    ],
)  # fmt: skip
def test_the_estimate_multiplies_first_along_lists(query: str, variables: dict, nodes: int) -> None:
    from graphql import parse

    from app.api.runtime.limits import estimated_nodes
    from app.api.schema import schema

    assert estimated_nodes(schema._schema, parse(query), None, variables) == nodes


async def test_a_query_just_under_the_cost_limit_runs(client, conn) -> None:
    await write_version(conn, "dense", dense(20), actor="test")
    query = "{ resources(first: 1000) { edges { node { dependents(first: 24) { edges { node { address } } } } } } }"
    body = await post(client, query)
    assert "errors" not in body, body
    assert len(body["data"]["resources"]["edges"]) == 20


async def test_the_answer_has_a_ceiling(client, conn, monkeypatch) -> None:
    await write_version(conn, "dense", dense(20), actor="test")
    monkeypatch.setattr("app.api.app.MAX_RESPONSE_BYTES", 1000)
    assert await error_codes(client, "{ resources { edges { node { address attributes } } } }") == [
        "LIMIT_EXCEEDED"
    ]
    assert "errors" not in await post(client, "{ states { totalCount } }")


async def test_the_graphql_body_has_a_limit(client, app) -> None:
    limit = app.state.settings.max_graphql_bytes
    big = json.dumps({"query": "{ states { totalCount } }", "variables": {"x": "a" * limit}})
    response = await client.post(
        "/graphql", content=big, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json()["code"] == "LIMIT_EXCEEDED"

    async def chunks():  # no Content-Length: counted as it streams in
        yield b'{"query": "{ states { totalCount } }", "x": "'
        for _ in range(limit // (1 << 20) + 1):
            yield b"a" * (1 << 20)
        yield b'"}'

    response = await client.post(
        "/graphql", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each piece goes out now
    return sock


def _ready_bytes(sock: socket.socket) -> bytes:
    """What the server sent so far, without waiting (b"" when nothing)."""
    readable, _, _ = select.select([sock], [], [], 0)
    return sock.recv(65536) if readable else b""


def _raw(url: str, request: bytes) -> bytes:
    """Send raw bytes, read the answer until the server closes."""
    with _connect(url) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        return received


@pytest.fixture(scope="module")
def limited(database_url):
    env = {
        "INFRAGRAPH_MAX_HEADER_BYTES": "8192",
        "INFRAGRAPH_MAX_AUTHORIZATION_BYTES": str(256 * 1024),
        "INFRAGRAPH_MAX_HEADERS": "20",
        "INFRAGRAPH_HEADER_TIMEOUT_S": "1",
        "INFRAGRAPH_BODY_TIMEOUT_S": "1",
        "INFRAGRAPH_KEEPALIVE_S": "1",
        "INFRAGRAPH_LARGE_WRITE_BYTES": "1000",
        "INFRAGRAPH_MAX_LARGE_WRITES": "1",
    }
    with live_server(database_url, env) as server:
        yield server
        # 503 is the cap's answer; nothing else in the 5xx range, no traceback
        assert not [e for e in server.server_errors() if '" 503 ' not in e], server.log()


def test_headers_over_the_size_limit_get_431(limited) -> None:
    request = b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n"
    answer = _raw(limited.url, request)
    assert answer.startswith(b"HTTP/1.1 431 ")
    assert b"connection: close" in answer.lower()
    assert httpx.get(f"{limited.url}/livez").status_code == 200  # the server is fine
    # one endless header, in pieces: refused once the pieces pass the limit
    with _connect(limited.url) as sock:
        sock.sendall(b"GET /livez HTTP/1.1\r\nX-Big: ")
        answer = b""
        for _ in range(20):
            try:
                sock.sendall(b"a" * 4096)
                time.sleep(0.02)
                answer += _ready_bytes(sock)
            except (BrokenPipeError, ConnectionResetError):
                pass
        assert answer.startswith(b"HTTP/1.1 431 ")


def test_the_authorization_header_has_an_allowance_of_its_own(limited) -> None:
    """A long credential (a 100 KB JWT, Basic-encoded) passes the headers' limit to be
    refused by the auth middleware with its reason; past its own allowance it is 431,
    and the other headers stay bounded however big the Authorization header is."""
    credential = b"Basic " + b"b" * 140_000
    answer = _raw(
        limited.url,
        b"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: "
        + credential
        + b"\r\n\r\n",
    )
    assert b" 200 " in answer.split(b"\r\n", 1)[0], answer[:200]
    beside = b"Authorization: " + credential + b"\r\nX-Big: " + b"a" * 10_000 + b"\r\n"
    answer = _raw(limited.url, b"GET /livez HTTP/1.1\r\nHost: x\r\n" + beside + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 431 ") and b"bytes of headers" in answer
    huge = b"GET /livez HTTP/1.1\r\nAuthorization: Bearer " + b"c" * 300_000 + b"\r\n\r\n"
    answer = _raw(limited.url, huge)
    assert answer.startswith(b"HTTP/1.1 431 ") and b"Authorization header over" in answer
    # an endless one, in pieces: refused once the pieces pass its allowance
    with _connect(limited.url) as sock:
        sock.sendall(b"GET /livez HTTP/1.1\r\nAuthorization: Bearer ")
        answer = b""
        for _ in range(30):
            try:
                sock.sendall(b"c" * 16384)
                time.sleep(0.02)
                answer += _ready_bytes(sock)
            except (BrokenPipeError, ConnectionResetError):
                pass
        assert answer.startswith(b"HTTP/1.1 431 ") and b"Authorization header over" in answer


def test_too_many_headers_get_431(limited) -> None:
    headers = b"".join(b"X-H%d: v\r\n" % i for i in range(30))
    assert _raw(limited.url, b"GET /livez HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n").startswith(
        b"HTTP/1.1 431 "
    )
    small = b"".join(b"X-H%d: v\r\n" % i for i in range(10))
    assert b" 200 " in _raw(
        limited.url, b"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + small + b"\r\n"
    )


def test_slow_or_idle_clients_are_cut(limited) -> None:
    # idle: never sends a byte
    with _connect(limited.url) as idle:
        began = time.monotonic()
        assert idle.recv(1024).startswith(b"HTTP/1.1 408 ")
        assert time.monotonic() - began < 5
    # slow loris: a header byte now and then, never done
    with _connect(limited.url) as slow:
        slow.sendall(b"GET /livez HTTP/1.1\r\n")
        answer = b""
        for _ in range(8):
            time.sleep(0.4)
            try:
                slow.sendall(b"X: y\r\n")
                answer += _ready_bytes(slow)
            except (BrokenPipeError, ConnectionResetError):
                pass
        assert answer.startswith(b"HTTP/1.1 408 ")
    # a body that stops coming
    with _connect(limited.url) as stalled:
        stalled.sendall(
            b"POST /states/stalled HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 500\r\n\r\n{"
        )
        assert stalled.recv(1024) == b""  # cut: the app saw the client gone


def _writing(client: httpx.AsyncClient) -> Callable[[], Awaitable[bool]]:
    """Whether a write is in flight (besides the /metrics request asking)."""

    async def check() -> bool:
        return await requests_in_flight(client) >= 2

    return check


async def test_large_writes_beyond_the_cap_get_503_with_retry_after(limited, conn) -> None:
    body = json.dumps(
        json.loads(state([resource("aws_vpc", "v", attributes={"pad": "x" * 2000})]))
    ).encode()
    release = asyncio.Event()

    async def slow_body():
        yield body[:100]
        await release.wait()
        yield body[100:]

    async with httpx.AsyncClient(
        base_url=limited.url, timeout=30, headers={"Content-Type": "application/json"}
    ) as client:
        headers = {"Content-Length": str(len(body))}
        first = asyncio.create_task(
            client.post("/states/large/one", content=slow_body(), headers=headers)
        )
        # the first holds the only slot while its body trickles
        await wait_until(_writing(client), "the first write")
        second = await client.post("/states/large/two", content=body)
        assert second.status_code == 503
        assert second.headers["Retry-After"] == "1"
        assert second.json()["code"] == "UNAVAILABLE"
        small = json.dumps(json.loads(state([resource("aws_vpc", "s")]))).encode()
        assert (
            len(small) < 1000
            and (await client.post("/states/large/small", content=small)).status_code == 200
        )
        release.set()
        assert (await first).status_code == 200
        assert (await client.post("/states/large/two", content=body)).status_code == 200


def test_a_state_over_the_large_write_size_is_streamed_through_a_file(limited) -> None:
    # over INFRAGRAPH_LARGE_WRITE_BYTES (1000 here): spooled to disk, read a resource at a
    # time (app/tfstate/stream.py), GET gives the same bytes back
    body = dumps(generate_state(40, seed=5), indent=True)
    assert len(body) > 1000
    headers = {"Content-Type": "application/json"}
    posted = httpx.post(f"{limited.url}/states/big/streamed", content=body, headers=headers)
    assert posted.status_code == 200, posted.text
    got = httpx.get(f"{limited.url}/states/big/streamed")
    assert got.content == body
    # a big body that is not a state is refused as a whole read refuses it
    broken = body.replace(b'"mode"', b"mode", 1)
    refused = httpx.post(f"{limited.url}/states/big/broken", content=broken, headers=headers)
    assert refused.status_code == 400
    assert "not a valid Terraform v4 state: not valid JSON" in refused.text
