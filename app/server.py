"""The Starlette application: routes, middleware (framing headers, request ids and
metrics, CORS, auth), exception handlers, health, metrics, lifespan (pools, the event feed).

Errors are answered here once, by type: an `AppError` with its status and
code; a database failure (app.db.expected) as 503 UNAVAILABLE, 413 or 400; a
client gone mid-body with nothing. Anything else reaches
app.observe.RequestMiddleware: a logged, counted, clean 500.

Health has its own small pool, so a request pool full of slow queries does
not make the server look dead: `/livez` is the process (no database),
`/readyz` (alias `/healthz`) the database and its migrations. A heavy query
keeps the event loop busy for seconds, though: `health_app` serves the same
routes from a thread of their own on INFRAGRAPH_HEALTH_PORT (app.serving).
"""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import asyncpg
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from app import crypto, db, process, tokens
from app.api.app import graphql_routes
from app.api.iac.routes import routes as iac_routes
from app.auth import AuthMiddleware, TokenCache
from app.backend.routes import WriteSlots
from app.backend.routes import routes as backend_routes
from app.config import Settings
from app.configuration.routes import routes as configuration_routes
from app.dashboard.routes import routes as dashboard_routes
from app.errors import AppError
from app.framing import FramingHeaders
from app.graph.notify import EventFeed
from app.http import error_response, json_response
from app.observe import IN_FLIGHT, UNAVAILABLE, RequestMiddleware, metrics_text
from app.oidc import config as oidc_config
from app.oidc.routes import routes as oidc_routes
from app.oidc.verify import Verifier
from app.plans.routes import routes as plan_routes
from app.token_watch import TokenWatch
from app.webhooks.worker import worker_running

log = logging.getLogger("infragraph")

HEALTH_TIMEOUT_S = 0.8  # /readyz answers within a second, up or down


async def livez(request: Request) -> Response:
    return json_response({"status": "ok"})


async def readyz(request: Request) -> Response:
    try:
        async with asyncio.timeout(HEALTH_TIMEOUT_S):
            async with request.app.state.health_pool.acquire() as conn:
                pending = await db.pending_migrations(conn)
    except db.ERROR_TYPES as exc:
        if db.expected(exc) is None:
            raise
        return json_response({"status": "unavailable", "error": "the database is unavailable"}, 503)
    if pending:
        return json_response({"status": "migrations pending", "pending": pending}, 503)
    return json_response({"status": "ok"})


async def metrics(request: Request) -> Response:
    return Response(metrics_text(request.app.state.pool), media_type="text/plain; version=0.0.4")


async def _app_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, AppError)
    return error_response(exc)


async def _database_error(request: Request, exc: Exception) -> Response:
    error = db.expected(exc)
    if error is None:
        raise exc  # a bug: RequestMiddleware answers it
    if error.status == 503:
        UNAVAILABLE.inc()
    return error_response(error)


async def _client_gone(request: Request, exc: Exception) -> Response:
    return Response(status_code=400)  # nobody is left to read it


def _health_routes() -> list[Route]:
    return [Route("/livez", livez), Route("/readyz", readyz), Route("/healthz", readyz)]


@contextlib.asynccontextmanager
async def _health_pool(app: Starlette, url: str) -> AsyncIterator[None]:
    app.state.health_pool = await db.create_pool(
        url, statement_timeout_ms=int(HEALTH_TIMEOUT_S * 1000), max_size=2
    )
    try:
        yield
    finally:
        await app.state.health_pool.close()


def health_app(database_url: str) -> Starlette:
    """Only the health routes, with their own pool: for a listener of their own."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with _health_pool(app, database_url):
            yield

    return Starlette(routes=_health_routes(), lifespan=lifespan)


def _cors(origins: tuple[str, ...]) -> list[Middleware]:
    """Outside auth: a preflight carries no credentials, so it is answered before auth;
    the request itself still needs them. No origins: no CORS headers at all."""
    if not origins:
        return []
    return [
        Middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "X-Request-ID"],
            allow_credentials=True,
            expose_headers=["X-Request-ID"],
            max_age=600,
        )
    ]


async def _say_access(conn: asyncpg.Connection, settings: Settings) -> None:
    """Close the server for good when it has bootstrap tokens, and say at start-up
    whether it is open (its first run), or closed with no way left to make a token."""
    if settings.api_tokens:
        await tokens.close_access(conn, "bootstrap tokens (INFRAGRAPH_API_TOKENS)")
        return
    if not await tokens.access_closed(conn):
        log.warning(
            "first run: no token has ever existed here (INFRAGRAPH_API_TOKENS is unset and "
            "the database has had none), so the server is open: anyone can read and write "
            "until the first token is made, and then never again"
        )
    elif not await tokens.any_live_admin(conn):
        log.warning(
            "the server is closed and no admin token is live (all revoked or expired): "
            "nobody can make a token; set INFRAGRAPH_API_TOKENS (name:token) and restart"
        )


def create_app(settings: Settings | None = None, *, database_url: str | None = None) -> Starlette:
    """The app; `database_url` overrides the settings (the embedded server's URL)."""
    settings = settings or Settings.from_env()
    # a bad OIDC config stops the start, with its reason
    issuers = oidc_config.load(settings.oidc_config) if settings.oidc_config else ()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        url = database_url or db.database_url(settings)
        pool = await db.create_pool(
            url,
            statement_timeout_ms=settings.statement_timeout_ms,
            max_size=settings.pool_size,
            acquire_timeout=settings.pool_timeout_s,
        )
        async with db.connection(pool) as conn:
            await db.migrate(conn, citus=settings.citus)
        crypto.use(crypto.Keyring(settings.encryption_key, settings.encryption_key_old))
        if settings.encryption_key is None:
            log.warning(
                "INFRAGRAPH_ENCRYPTION_KEY is unset: state is stored in clear (raw state bytes "
                "and the values Terraform marks sensitive, readable in any database dump)"
            )
        async with db.connection(pool) as conn:
            await _say_access(conn, settings)
        app.state.token_cache = cache = TokenCache(pool, settings.token_cache_seconds)
        if issuers:
            cache.oidc = Verifier(issuers)
        app.state.token_watch = watch = TokenWatch(pool, cache)
        app.state.pool = pool
        collector = asyncio.create_task(process.collect_when_idle(lambda: IN_FLIGHT.value))
        expiries = asyncio.create_task(watch.record_expiries(), name="token expiries")
        try:
            async with (
                _health_pool(app, url),
                EventFeed(url).running() as feed,
                worker_running(pool, url, settings),
            ):
                feed.listen(watch.heard)
                app.state.event_feed = feed
                yield
        finally:
            collector.cancel()
            expiries.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await expiries
            await pool.close()
            if cache.oidc is not None:
                await cache.oidc.close()

    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        AppError: _app_error,
        ClientDisconnect: _client_gone,
        **{kind: _database_error for kind in db.ERROR_TYPES},
    }
    app = Starlette(
        routes=[
            *_health_routes(),
            Route("/metrics", metrics),
            *plan_routes(),  # before the backend's: /states/{name}/plans
            *configuration_routes(),  # before the backend's: /states/{name}/configurations
            # a state write's GC pause and allocator trim: the process's (app.process)
            *backend_routes(
                [Middleware(process.StateWrites, large_write_bytes=settings.large_write_bytes)]
            ),
            *iac_routes(),
            *graphql_routes(settings),
            *dashboard_routes(),
            *oidc_routes(),
        ],
        middleware=[
            Middleware(FramingHeaders),
            Middleware(RequestMiddleware),
            *_cors(settings.cors_origins),
            Middleware(AuthMiddleware, tokens=settings.api_tokens),
        ],
        exception_handlers=handlers,
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.large_writes = WriteSlots(settings.max_large_writes)
    return app
