"""Serving the app: uvicorn (uvloop, httptools) with the limits a public server needs.

uvicorn bounds neither headers nor how long a client may take to send them
or its body. `BoundedHttpToolsProtocol` adds, per connection:

- header bytes (431) and header count (400) limits, checked as bytes arrive,
  before the app or the auth middleware sees anything;
- a header deadline: a request's headers must be in within
  `header_timeout_s` of its first byte (or of the connection, or of the
  previous answer), else 408 and close (slow-loris and idle connections);
- a body timeout: a body that pauses longer than `body_timeout_s` is cut.

An idle kept-alive connection is closed after `keepalive_s` (uvicorn), and on
SIGTERM in-flight requests (state writes included) get `shutdown_timeout_s`
to finish before the pool closes.
"""

import asyncio
import functools
from dataclasses import dataclass
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app import db
from app.config import Settings
from app.observe import log_config
from app.server import create_app


@dataclass(frozen=True)
class HttpLimits:
    max_header_bytes: int
    max_headers: int
    header_timeout_s: float
    body_timeout_s: float


class _TooManyHeaders(Exception):
    """Raised in a parser callback: httptools makes it a parse error, answered 400."""


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, limits: HttpLimits, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits
        self.reading_headers = True
        self.header_bytes = 0
        self.deadline: asyncio.TimerHandle | None = None

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self.deadline = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def _expired(self) -> None:
        self.deadline = None
        if self.transport.is_closing():
            return
        if self.reading_headers:
            self._refuse(408, b"Request Timeout", "the request headers took too long")
        elif self.flow.read_paused:  # the app is slow to read, not the client to send
            self._arm(self.limits.body_timeout_s)
        else:  # a body that stopped coming: the app sees a disconnect
            self.transport.close()

    def _refuse(self, status: int, phrase: bytes, message: str) -> None:
        body = message.encode()
        self.transport.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (status, phrase, len(body), body)
        )
        self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.limits.header_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        # still in the headers after this chunk: all of it was header bytes
        if self.reading_headers and not self.transport.is_closing():
            self.header_bytes += len(data)
            if self.header_bytes > self.limits.max_header_bytes:
                self._refuse(
                    431,
                    b"Request Header Fields Too Large",
                    f"the request headers are over {self.limits.max_header_bytes} bytes",
                )

    def on_header(self, name: bytes, value: bytes) -> None:
        if len(self.headers) >= self.limits.max_headers:
            raise _TooManyHeaders
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self.reading_headers = False
        self._arm(self.limits.body_timeout_s)
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        self._arm(self.limits.body_timeout_s)
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.reading_headers = True
        self.header_bytes = 0
        if not self.transport.is_closing():
            self._arm(self.limits.header_timeout_s)


def run(settings: Settings, host: str, port: int) -> None:
    # Resolve the database first: an embedded server starts here, in the main process.
    app = create_app(settings, database_url=db.database_url(settings))
    limits = HttpLimits(
        max_header_bytes=settings.max_header_bytes,
        max_headers=settings.max_headers,
        header_timeout_s=settings.header_timeout_s,
        body_timeout_s=settings.body_timeout_s,
    )
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        loop="uvloop",
        http=functools.partial(BoundedHttpToolsProtocol, limits=limits),  # type: ignore[arg-type]
        log_config=log_config(settings.log_format),
        timeout_keep_alive=settings.keepalive_s,  # type: ignore[arg-type]
        timeout_graceful_shutdown=settings.shutdown_timeout_s,  # type: ignore[arg-type]
    )
    uvicorn.Server(config).run()
