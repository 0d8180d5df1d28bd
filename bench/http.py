"""A lean HTTP/1.1 client over asyncio streams, keep-alive, for the benchmark's requests.

httpx costs about 2 ms of CPU a request here, more than the server spends on a
LOCK: measured through it, 16 clients locking would measure httpx (the client
process saturates a core, the server does not). Terraform's Go client is far
lighter; so is this one (tens of microseconds a request).
"""

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from app.jsonutil import dumps, loads


@dataclass
class Response:
    method: str
    path: str
    status_code: int
    headers: dict[str, str]
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode(errors="replace")

    def json(self) -> Any:
        return loads(self.content)


# uvicorn closes a connection idle for 5 s; one idle this long is not reused.
_MAX_IDLE_S = 4.0


@dataclass
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    idle_since: float = 0.0

    def usable(self) -> bool:
        fresh = time.monotonic() - self.idle_since < _MAX_IDLE_S
        if not (fresh and not self.reader.at_eof() and not self.writer.is_closing()):
            self.writer.close()
            return False
        return True


@dataclass
class Client:
    """Requests to one server (`base_url`), over at most `connections` kept-alive sockets."""

    base_url: str
    connections: int = 32
    _idle: list[_Connection] = field(default_factory=list)
    _slots: asyncio.Semaphore = field(init=False)

    def __post_init__(self) -> None:
        self._slots = asyncio.Semaphore(self.connections)
        url = urlsplit(self.base_url)
        self._host, self._port = url.hostname or "127.0.0.1", url.port or 80

    async def request(
        self,
        method: str,
        path: str,
        *,
        content: bytes = b"",
        json: Any = None,
        headers: dict[str, str] | None = None,
    ) -> Response:
        if json is not None:
            content = dumps(json)
        # every body here is JSON: the server refuses a state-changing body of another type
        headers = {"Content-Type": "application/json", **(headers or {})}
        head = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        message = (
            f"{method} {path} HTTP/1.1\r\nHost: {self._host}\r\n{head}"
            f"Content-Length: {len(content)}\r\n\r\n"
        ).encode()
        async with self._slots:
            conn = await self._connection()
            try:
                conn.writer.write(message)
                if content:
                    conn.writer.write(content)
                status, reply_headers, body = await self._read(conn.reader)
            except BaseException:
                conn.writer.close()
                raise
            if reply_headers.get("connection", "").lower() == "close":
                conn.writer.close()
            else:
                conn.idle_since = time.monotonic()
                self._idle.append(conn)
        return Response(method, path, status, reply_headers, body)

    async def get(self, path: str, **kwargs: Any) -> Response:
        return await self.request("GET", path, **kwargs)

    async def post(self, path: str, **kwargs: Any) -> Response:
        return await self.request("POST", path, **kwargs)

    async def aclose(self) -> None:
        for conn in self._idle:
            conn.writer.close()
        self._idle.clear()

    async def _connection(self) -> _Connection:
        while self._idle:
            conn = self._idle.pop()
            if conn.usable():
                return conn
        reader, writer = await asyncio.open_connection(self._host, self._port, limit=1 << 20)
        return _Connection(reader, writer)

    @staticmethod
    async def _read(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
        lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            return status, headers, await reader.readexactly(int(headers["content-length"]))
        if headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
                chunks.append(await reader.readexactly(size))
                await reader.readexactly(2)
            await reader.readuntil(b"\r\n")
            return status, headers, b"".join(chunks)
        raise ConnectionError(f"a response with neither Content-Length nor chunks: {headers}")
