"""A webhook receiver for tests: an HTTP server on 127.0.0.1 (a thread) that records each
POST and answers with the status `answer` says; it verifies nothing itself."""

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from app import jsonutil

MAX_BODY = 1024 * 1024


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes

    @property
    def json(self) -> Any:
        return jsonutil.loads(self.body)

    @property
    def delivery(self) -> str:
        return self.headers["x-infragraph-delivery"]


class _Server(ThreadingHTTPServer):
    # a worker sends dozens at once: the default backlog (5) would drop connections
    request_queue_size = 128
    daemon_threads = True


class Receiver:
    def __init__(
        self,
        answer: Callable[[Received], int] = lambda r: 200,
        *,
        port: int = 0,
        received: list[Received] | None = None,
    ) -> None:
        self.answer = answer
        self.received: list[Received] = [] if received is None else received
        self.changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as a receiver behind a proxy would

            def do_POST(self) -> None:
                length = min(int(self.headers.get("Content-Length", 0)), MAX_BODY)
                got = Received(
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length),
                )
                status = receiver.answer(got)
                if 200 <= status < 300:  # only what was taken counts as received
                    with receiver.changed:
                        receiver.received.append(got)
                        receiver.changed.notify_all()
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = _Server(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"

    def wait_for(
        self, done: Callable[[list[Received]], bool], timeout: float = 30.0
    ) -> list[Received]:
        """The requests received once `done` holds of them; AssertionError after `timeout`."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while not done(self.received):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"not received in {timeout} s; got {[r.json for r in self.received]}"
                    )
                self.changed.wait(left)
            return list(self.received)


@contextlib.contextmanager
def receiving(
    answer: Callable[[Received], int] = lambda r: 200,
    *,
    port: int = 0,
    received: list[Received] | None = None,
) -> Iterator[Receiver]:
    """A receiver serving until the block ends (on `port`, adding to `received`: the same
    receiver back after an outage)."""
    receiver = Receiver(answer, port=port, received=received)
    thread = threading.Thread(target=receiver.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()
        thread.join(timeout=5)
