"""uvicorn, asyncpg and prometheus-client internals: the httptools protocol app/serving.py
subclasses, asyncpg's pool app/db.py wraps (made by create_pool) and its private error
base, and the in-flight gauge read through a function of ours (no private `_value`)."""

import asyncio
from typing import Any

import asyncpg
from prometheus_client import generate_latest

from app import db
from app.observe import IN_FLIGHT, REGISTRY
from tests.helpers.compat_hooks import attribute, parameters, require

PROTOCOL = "uvicorn.protocols.http.httptools_impl:HttpToolsProtocol"


def test_the_httptools_protocol_has_what_serving_overrides() -> None:
    parameters(f"{PROTOCOL}.__init__", ["config", "server_state", "app_state", "_loop"])
    for callback in (
        "connection_made",
        "connection_lost",
        "data_received",
        "send_400_response",
        "on_url",
        "on_header",
        "on_headers_complete",
        "on_body",
        "on_message_complete",
        "on_response_complete",
    ):
        attribute(f"{PROTOCOL}.{callback}")
    attribute("uvicorn.config:LOGGING_CONFIG")


def test_the_httptools_protocol_keeps_its_transport_flow_and_loop() -> None:
    import uvicorn
    from uvicorn.server import ServerState

    protocol_class: Any = attribute(PROTOCOL)

    async def made() -> Any:
        config = uvicorn.Config(app=lambda *_: None, http="httptools", log_config=None)
        config.load()
        loop = asyncio.get_running_loop()
        protocol = protocol_class(config, ServerState(), {}, _loop=loop)

        class Transport(asyncio.Transport):
            def get_extra_info(self, name: str, default: Any = None) -> Any:
                return ("127.0.0.1", 1) if name in ("peername", "sockname") else default

        protocol.connection_made(Transport())
        return protocol

    protocol = asyncio.run(made())
    for name in ("transport", "flow", "loop"):
        require(hasattr(protocol, name), f"HttpToolsProtocol.{name}", "no longer set")
    require(hasattr(protocol.flow, "read_paused"), "FlowControl.read_paused", "gone")
    protocol.timeout_keep_alive_task and protocol.timeout_keep_alive_task.cancel()


async def test_the_wrapped_pool_acquires_and_counts(database_url: str) -> None:
    parameters("asyncpg:Pool.acquire", ["timeout"])
    pool = await db.create_pool(database_url, max_size=1, acquire_timeout=5)
    try:
        require(isinstance(pool.pool, asyncpg.Pool), "asyncpg.create_pool", "made no Pool")
        async with pool.acquire() as conn:
            require(await conn.fetchval("SELECT 1") == 1, "asyncpg.Pool.acquire", "no answer")
            try:  # an argument asyncpg cannot encode: a DataError, app.db's 400
                await conn.fetchval("SELECT $1::int4", 2**40)
            except Exception as exc:
                refused: Exception | None = exc
            else:
                refused = None
            require(
                isinstance(refused, asyncpg.DataError),
                "asyncpg.DataError",
                f"an int4 out of range raised {refused!r}",
            )
            require(
                isinstance(db.expected(refused), db.BadInput),  # type: ignore[arg-type]
                "app.db.expected",
                "does not make it a 400",
            )
        require(pool.waiting == 0, "app.db.Pool.waiting", f"is {pool.waiting}")
    finally:
        await pool.close()


def test_asyncpg_private_error_base() -> None:
    base = attribute("asyncpg.exceptions._base")
    for name in ("InternalClientError", "DataError"):
        require(
            issubclass(getattr(base, name, type(None)), Exception),
            f"asyncpg.exceptions._base.{name}",
            "is no longer an exception class",
        )


def test_the_in_flight_gauge_reads_our_count() -> None:
    IN_FLIGHT.add(3)
    try:
        text = generate_latest(REGISTRY).decode()
    finally:
        IN_FLIGHT.add(-3)
    require(
        "infragraph_http_requests_in_flight 3.0" in text,
        "prometheus_client Gauge.set_function",
        "the in-flight gauge does not show our count",
    )
