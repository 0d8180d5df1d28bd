"""What an operator sees: request ids, Prometheus metrics, logs (text or JSON),
and the last line of defence, a clean 500 for any unexpected exception.

`RequestMiddleware` wraps the whole app: it gives each request an id (the
client's `X-Request-ID` when it is a sane one), echoes it in the response,
times and counts the request by route and status, and turns an exception no
handler took into one logged traceback (with the id), one count, and a JSON
500 with `Connection: close`: the connection may be in any state after a bug.
"""

import contextvars
import copy
import logging
import re
import threading
import time
import uuid
from typing import Any

import prometheus_client
import uvicorn.config
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from pythonjsonlogger.json import JsonFormatter
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.http import json_response

log = logging.getLogger("infragraph")

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
_SANE_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")

REGISTRY = CollectorRegistry()
REQUESTS = Counter(
    "infragraph_http_requests",
    "HTTP requests answered, by route, method and status.",
    ["route", "method", "status"],
    registry=REGISTRY,
)
LATENCY = Histogram(
    "infragraph_http_request_duration_seconds",
    "Time to answer an HTTP request, by route.",
    ["route"],
    registry=REGISTRY,
)
UNEXPECTED = Counter(
    "infragraph_unexpected_errors", "Exceptions no handler expected (bugs).", registry=REGISTRY
)
UNAVAILABLE = Counter(
    "infragraph_database_unavailable",
    "Requests answered 503 or UNAVAILABLE because of the database.",
    registry=REGISTRY,
)
POOL = Gauge(
    "infragraph_db_pool_connections",
    "Request pool connections, by state (in_use, idle, waiting: requests waiting for one).",
    ["state"],
    registry=REGISTRY,
)
STATE_WRITES = Counter(
    "infragraph_state_writes",
    "State POSTs stored, by result (created, or retried: already stored).",
    ["result"],
    registry=REGISTRY,
)
IMPORT_BYTES = Counter(
    "infragraph_import_bytes", "Bytes of state bodies stored.", registry=REGISTRY
)
LOCK_CONFLICTS = Counter(
    "infragraph_lock_conflicts",
    "LOCKs refused because another holder has the lock (Terraform waits and retries).",
    registry=REGISTRY,
)
LARGE_WRITES_REFUSED = Counter(
    "infragraph_large_writes_refused",
    "Large state POSTs answered 503 because the cap on concurrent ones was reached.",
    registry=REGISTRY,
)
SUBSCRIBERS = Gauge(
    "infragraph_subscribers",
    "GraphQL subscriptions open on this server (app.graph.notify).",
    registry=REGISTRY,
)


class InFlight:
    """Requests being answered now: a count this process reads (a full collection waits
    for 0) and /metrics shows. The health thread counts too, hence the lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0

    def add(self, delta: int) -> None:
        with self._lock:
            self.value += delta


IN_FLIGHT = InFlight()
Gauge(
    "infragraph_http_requests_in_flight", "HTTP requests being answered now.", registry=REGISTRY
).set_function(lambda: IN_FLIGHT.value)


def metrics_text(pool: Any) -> bytes:
    """The exposition text, pool gauges read now."""
    size, idle = pool.get_size(), pool.get_idle_size()
    POOL.labels("in_use").set(size - idle)
    POOL.labels("idle").set(idle)
    POOL.labels("waiting").set(pool.waiting)
    return prometheus_client.generate_latest(REGISTRY)


def _route(scope: Scope) -> str:
    """The route's template, not the path: one label per route, whatever the names."""
    route = scope.get("route")
    return getattr(route, "path", None) or "unmatched"


class RequestMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = next((v for k, v in scope["headers"] if k == b"x-request-id"), b"").decode(
            "latin-1"
        )
        rid = incoming if _SANE_ID.fullmatch(incoming) else uuid.uuid4().hex
        token = request_id.set(rid)
        scope.setdefault("state", {})["request_id"] = rid
        status = 500
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                started = True
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", rid.encode())]
            await send(message)

        begun = time.perf_counter()
        IN_FLIGHT.add(1)
        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            UNEXPECTED.inc()
            log.exception(
                "unexpected error (a bug) in %s %s [request %s]",
                scope["method"],
                scope["path"],
                rid,
            )
            status = 500
            if not started:  # else the response is cut short: the client sees it broken
                response = json_response(
                    {"error": "internal server error", "code": "INTERNAL", "request_id": rid},
                    500,
                    {"Connection": "close"},
                )
                await response(scope, receive, send_with_id)
        finally:
            IN_FLIGHT.add(-1)
            route = _route(scope)
            REQUESTS.labels(route, scope["method"], str(status)).inc()
            LATENCY.labels(route).observe(time.perf_counter() - begun)
            request_id.reset(token)


class _RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        return True


def log_config(log_format: str) -> dict[str, Any]:
    """The logging configuration (uvicorn's `log_config`). Text: uvicorn's own
    format for its loggers, the request id in the app's lines. JSON: one object
    per line for every logger, the request id on each."""
    if log_format == "json":
        main: dict[str, Any] = {
            "()": JsonFormatter,
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        }
    else:
        main = {"format": "%(levelname)s %(name)s [%(request_id)s]: %(message)s"}
    config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config["filters"] = {"request_id": {"()": _RequestIdFilter}}
    config["formatters"]["main"] = main
    config["handlers"]["main"] = {
        "class": "logging.StreamHandler",
        "formatter": "main",
        "filters": ["request_id"],
    }
    config["root"] = {"handlers": ["main"], "level": "INFO"}
    if log_format == "json":  # uvicorn's loggers pass their records up to the root's handler
        for name in ("uvicorn", "uvicorn.access"):
            config["loggers"][name]["handlers"] = []
            config["loggers"][name]["propagate"] = True
    return config
