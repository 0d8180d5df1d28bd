"""The Starlette application: routes and lifespan (pool, migrations)."""

import contextlib
import logging
from collections.abc import AsyncIterator

import asyncpg
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from app import db
from app.api.app import graphql_route
from app.api.iac.routes import routes as iac_routes
from app.auth import AuthMiddleware
from app.backend.routes import routes as backend_routes
from app.config import Settings

log = logging.getLogger("infragraph")


async def healthz(request: Request) -> JSONResponse:
    pool: asyncpg.Pool = request.app.state.pool
    try:
        await pool.fetchval("SELECT 1")
    except (OSError, asyncpg.PostgresError) as exc:
        return JSONResponse({"status": "unavailable", "error": str(exc)}, status_code=503)
    return JSONResponse({"status": "ok"})


def create_app(settings: Settings | None = None, *, database_url: str | None = None) -> Starlette:
    """The app; `database_url` overrides the settings (the embedded server's URL)."""
    settings = settings or Settings.from_env()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        url = database_url or db.database_url(settings)
        pool = await db.create_pool(url, statement_timeout_ms=settings.statement_timeout_ms)
        async with db.connection(pool) as conn:
            await db.migrate(conn)
        if not settings.api_tokens:
            log.warning(
                "INFRAGRAPH_API_TOKENS is unset: the server is open, anyone can read and write"
            )
        app.state.pool = pool
        try:
            yield
        finally:
            await pool.close()

    app = Starlette(
        routes=[
            Route("/healthz", healthz),
            *backend_routes(),
            *iac_routes(),
            graphql_route(settings),
        ],
        middleware=[Middleware(AuthMiddleware, tokens=settings.api_tokens)],
        lifespan=lifespan,
    )
    app.state.settings = settings
    return app
