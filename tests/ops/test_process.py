"""The process's tuning around state writes (app.process.StateWrites): the cyclic GC off
from the moment a POST's whole body is in until it is answered, and the large writes
counted for the allocator's trim."""

import gc
from collections.abc import AsyncIterator

import httpx
from starlette.types import Receive, Scope, Send

from app.process import StateWrites


class Endpoint:
    """An ASGI endpoint that records the GC's state before and after reading the body,
    and how many large writes the middleware counts while it runs."""

    def __init__(self) -> None:
        self.seen: list[tuple[bool, bool, int]] = []
        self.middleware: StateWrites | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        before = gc.isenabled()
        while (await receive()).get("more_body"):
            pass
        assert self.middleware is not None
        self.seen.append((before, gc.isenabled(), self.middleware.large))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})


def _client(endpoint: Endpoint, large_write_bytes: int) -> httpx.AsyncClient:
    middleware = StateWrites(endpoint, large_write_bytes=large_write_bytes)
    endpoint.middleware = middleware
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=middleware), base_url="http://t")


async def _chunks() -> AsyncIterator[bytes]:
    for chunk in (b'{"a":', b" 1}"):
        yield chunk


async def test_a_post_runs_without_the_cyclic_gc_once_its_body_is_in() -> None:
    assert gc.isenabled()
    endpoint = Endpoint()
    async with _client(endpoint, large_write_bytes=1000) as client:
        assert (await client.post("/states/x", content=b"{}")).status_code == 200
        assert (await client.get("/states/x")).status_code == 200
    # the POST: on before its body, off after; the GET: on throughout
    assert endpoint.seen == [(True, False, 0), (True, True, 0)]
    assert gc.isenabled()


async def test_large_writes_are_counted_while_they_run() -> None:
    endpoint = Endpoint()
    async with _client(endpoint, large_write_bytes=4) as client:
        await client.post("/states/x", content=b"{}")  # declared, small
        await client.post("/states/x", content=b'{"a": 1}')  # declared, over the bytes
        await client.post("/states/x", content=_chunks())  # no Content-Length
    assert [large for _, _, large in endpoint.seen] == [0, 1, 1]
    assert endpoint.middleware is not None and endpoint.middleware.large == 0
    assert gc.isenabled()


async def test_a_gc_already_off_is_left_off() -> None:
    endpoint = Endpoint()
    gc.disable()
    try:
        async with _client(endpoint, large_write_bytes=1000) as client:
            await client.post("/states/x", content=b"{}")
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert endpoint.seen == [(False, False, 0)]
