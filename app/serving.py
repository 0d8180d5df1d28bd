"""Serving the app: uvicorn (uvloop, httptools) with the limits a public server needs.

uvicorn bounds neither headers nor how long a client may take to send them
or its body. `BoundedHttpToolsProtocol` adds, per connection:

- header bytes and header count limits (431), checked as the parser meets
  them and as bytes arrive, before the app or the auth middleware sees anything;
  the Authorization header has an allowance of its own (`max_authorization_bytes`),
  so an oversized credential (a 100 KB JWT) reaches the auth middleware and is
  refused there with its reason (401), while the other headers stay bounded;
- a header deadline: a request's headers must be in within
  `header_timeout_s` of its first byte (or of the connection, or of the
  previous answer), else 408 and close (slow-loris and idle connections);
- a body timeout: a body that pauses longer than `body_timeout_s` is cut.

An idle kept-alive connection is closed after `keepalive_s` (uvicorn), and on
SIGTERM in-flight requests (state writes included) get `shutdown_timeout_s`
to finish before the pool closes.

With `health_port` set, the health routes are also served on that port by a
thread with its own event loop and pool: a query that keeps the main loop
busy for seconds (building a large answer is CPU work) does not delay them,
the GIL being handed over every few milliseconds.
"""

import asyncio
import functools
import threading
from dataclasses import dataclass
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from websockets.http11 import MAX_LINE_LENGTH as WS_MAX_LINE_LENGTH

from app import db, process
from app.config import Settings
from app.observe import log_config
from app.server import create_app, health_app

REFUSED_LINGER_S = 1.0
_AUTHORIZATION = b"authorization:"
_LINE_START = len(_AUTHORIZATION)  # bytes of a line's start kept: enough to name it


@dataclass(frozen=True)
class HttpLimits:
    max_header_bytes: int
    max_authorization_bytes: int
    max_headers: int
    header_timeout_s: float
    body_timeout_s: float


class _Refused(Exception):
    """Raised in a parser callback to stop parsing; httptools makes it a parse error,
    and `send_400_response` answers the refusal instead."""


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, limits: HttpLimits, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits
        self.reading_headers = True
        self.header_bytes = 0  # of the request line and headers the parser saw
        self.received_in_headers = 0  # bytes received while still in the headers
        self.authorization_bytes = 0  # of the Authorization headers the parser saw
        self.line_start = b""  # the first bytes of the header line still coming
        self.line_bytes = 0  # and how many of its bytes have come
        self.deadline: asyncio.TimerHandle | None = None
        self.refused = False

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self.deadline = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def _expired(self) -> None:
        self.deadline = None
        if self.refused or self.transport.is_closing():
            return
        if self.reading_headers:
            self._refuse(408, b"Request Timeout", "the request headers took too long")
        elif self.flow.read_paused:  # the app is slow to read, not the client to send
            self._arm(self.limits.body_timeout_s)
        else:  # a body that stopped coming: the app sees a disconnect
            self.transport.close()

    def _refuse(self, status: int, phrase: bytes, message: str) -> None:
        """Answer and close. Closing at once with the client's bytes unread would
        reset the connection and lose the answer: what still comes is read and
        dropped until REFUSED_LINGER_S has passed."""
        body = message.encode()
        self.transport.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (status, phrase, len(body), body)
        )
        self.refused = True
        self._disarm()
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(REFUSED_LINGER_S, self.transport.close)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.limits.header_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _headers_too_large(self, what: str) -> None:
        self._refuse(431, b"Request Header Fields Too Large", f"the request has {what}")

    def _follow_lines(self, data: bytes) -> None:
        """Which header line is still coming, and how much of it has (the parser holds
        an unfinished header until it ends: this is what says how big it is)."""
        cut = data.rfind(b"\n")
        if cut == -1:
            self.line_start = (self.line_start + data[:_LINE_START])[:_LINE_START]
            self.line_bytes += len(data)
        else:
            self.line_start = data[cut + 1 : cut + 1 + _LINE_START]
            self.line_bytes = len(data) - cut - 1

    def data_received(self, data: bytes) -> None:
        if self.refused:
            return
        if self.reading_headers:
            self._follow_lines(data)
        super().data_received(data)
        # still in the headers after this chunk: all of it was header bytes (one
        # huge header is buffered by the parser until it ends: stop it early)
        if self.reading_headers and not self.refused and not self.transport.is_closing():
            self.received_in_headers += len(data)
            coming = self.line_bytes if self.line_start.lower().startswith(_AUTHORIZATION) else 0
            if self.authorization_bytes + coming > self.limits.max_authorization_bytes:
                self._authorization_too_large()
            elif (
                self.received_in_headers - self.authorization_bytes - coming
                > self.limits.max_header_bytes
            ):
                self._headers_too_large(f"over {self.limits.max_header_bytes} bytes of headers")

    def _authorization_too_large(self) -> None:
        self._headers_too_large(
            f"an Authorization header over {self.limits.max_authorization_bytes} bytes"
        )

    def send_400_response(self, msg: str) -> None:
        if self.authorization_bytes > self.limits.max_authorization_bytes:
            self._authorization_too_large()
        elif self.header_bytes > self.limits.max_header_bytes:
            self._headers_too_large(f"over {self.limits.max_header_bytes} bytes of headers")
        elif len(self.headers) >= self.limits.max_headers:
            self._headers_too_large(f"over {self.limits.max_headers} headers")
        else:
            super().send_400_response(msg)

    def handle_websocket_upgrade(self) -> None:
        # The websocket library reads the handshake again, each line at most its
        # MAX_LINE_LENGTH: a longer one would stall it. No credential this server accepts
        # is that long (an OIDC token is at most 8192 bytes): refused here, with why.
        for name, value in self.scope["headers"]:
            if len(name) + len(value) + 2 > WS_MAX_LINE_LENGTH:
                if name == b"authorization":
                    self._refuse(
                        401,
                        b"Unauthorized",
                        f"the Authorization header is over {WS_MAX_LINE_LENGTH} bytes: no "
                        "credential this server accepts is that long",
                    )
                else:
                    self._headers_too_large(f"a header over {WS_MAX_LINE_LENGTH} bytes")
                return
        super().handle_websocket_upgrade()

    def on_url(self, url: bytes) -> None:
        self.header_bytes += len(url)
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        size = len(name) + len(value) + 4
        if name.lower() == b"authorization":
            self.authorization_bytes += size
        else:
            self.header_bytes += size
        if (
            self.authorization_bytes > self.limits.max_authorization_bytes
            or self.header_bytes > self.limits.max_header_bytes
            or len(self.headers) >= self.limits.max_headers
        ):
            raise _Refused
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
        self.header_bytes = self.received_in_headers = self.authorization_bytes = 0
        self.line_start, self.line_bytes = b"", 0
        if not self.transport.is_closing():
            self._arm(self.limits.header_timeout_s)


def _serve_health(url: str, host: str, port: int) -> uvicorn.Server:
    # log_config None: the main server's logging stays as configured
    config = uvicorn.Config(
        health_app(url), host=host, port=port, loop="uvloop", log_config=None, access_log=False
    )
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, name="health", daemon=True).start()
    return server


def run(settings: Settings, host: str, port: int) -> None:
    process.tune()  # before any thread allocates
    # Resolve the database first: an embedded server starts here, in the main process.
    url = db.database_url(settings)
    app = create_app(settings, database_url=url)
    limits = HttpLimits(
        max_header_bytes=settings.max_header_bytes,
        max_authorization_bytes=settings.max_authorization_bytes,
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
    health = _serve_health(url, host, settings.health_port) if settings.health_port else None
    try:
        uvicorn.Server(config).run()
    finally:
        if health is not None:
            health.should_exit = True
