"""The per-request context every resolver gets (`info.context`)."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Concatenate, ParamSpec, TypeVar

import asyncpg
import strawberry
from starlette.requests import Request
from starlette.responses import Response

from app.api.catalog.loaders import CatalogLoaders
from app.api.graph.loaders import GraphLoaders
from app.auth import ANONYMOUS
from app.config import Settings

P = ParamSpec("P")
T = TypeVar("T")


@dataclass
class Context:
    request: Request
    response: Response
    pool: asyncpg.Pool
    settings: Settings
    actor: str  # who is asking, as the auth middleware named them
    graph: GraphLoaders
    catalog: CatalogLoaders

    async def read(
        self,
        fn: Callable[Concatenate[asyncpg.Connection, P], Awaitable[T]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Run a domain read function on a pooled connection."""
        async with self.pool.acquire() as conn:
            return await fn(conn, *args, **kwargs)


Info = strawberry.Info[Context, None]


def make_context(request: Request, response: Response) -> Context:
    pool: asyncpg.Pool = request.app.state.pool
    settings: Settings = request.app.state.settings
    return Context(
        request=request,
        response=response,
        pool=pool,
        settings=settings,
        actor=getattr(request.state, "actor", ANONYMOUS),
        graph=GraphLoaders.create(pool, settings),
        catalog=CatalogLoaders.create(pool),
    )
