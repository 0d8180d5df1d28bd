"""The per-request context every resolver gets (`info.context`)."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Concatenate, ParamSpec, TypeVar

import asyncpg
import strawberry
from starlette.requests import HTTPConnection
from starlette.responses import Response
from starlette.websockets import WebSocket

from app import db
from app.access import Principal
from app.api.catalog.loaders import CatalogLoaders
from app.api.configuration.loaders import ConfigurationLoaders
from app.api.graph.loaders import GraphLoaders
from app.api.rationed import share
from app.auth import TokenCache, principal
from app.config import Settings
from app.graph.notify import EventFeed

P = ParamSpec("P")
T = TypeVar("T")


@dataclass
class Context:
    request: HTTPConnection  # a Request, or the WebSocket of a subscription
    response: Response | WebSocket
    pool: db.Pool  # the request's share of the server's (app.api.rationed)
    settings: Settings
    principal: Principal  # who is asking, as the auth middleware found them (app.access)
    graph: GraphLoaders
    catalog: CatalogLoaders
    events: EventFeed  # what subscriptions follow
    # a websocket's connection_init payload (strawberry sets it)
    connection_params: dict[str, object] | None = None
    # the credentials the caller showed (a header, or a websocket's connection_init):
    # a websocket identifies its caller again with them on every operation (app.api.ws)
    authorization: str | None = None
    # why a websocket's connection_init was refused: its close frame says it (app.api.ws)
    refusal: str | None = None

    @property
    def actor(self) -> str:
        """The caller's name, as events record it."""
        return self.principal.name

    def identified(self, caller: Principal, authorization: str | None) -> None:
        """A websocket's caller, once its connection_init showed a token (app.api.app):
        the loaders read what it may read."""
        self.principal = caller
        self.authorization = authorization
        self.graph = GraphLoaders(self.pool, self.settings, caller.patterns)

    @cached_property
    def configuration(self) -> ConfigurationLoaders:
        return ConfigurationLoaders(self.pool)

    @property
    def token_cache(self) -> TokenCache:
        cache: TokenCache = self.request.app.state.token_cache
        return cache

    async def with_conn(
        self,
        fn: Callable[Concatenate[asyncpg.Connection, P], Awaitable[T]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Run a domain function (a read or a write) on a connection taken from the pool."""
        async with db.connection(self.pool) as conn:
            return await fn(conn, *args, **kwargs)


Info = strawberry.Info[Context, None]


def make_context(request: HTTPConnection, response: Response | WebSocket) -> Context:
    settings: Settings = request.app.state.settings
    pool = share(request.app.state.pool, settings.request_connections)
    caller = principal(request)
    return Context(
        request=request,
        response=response,
        pool=pool,
        settings=settings,
        principal=caller,
        graph=GraphLoaders(pool, settings, caller.patterns),
        catalog=CatalogLoaders(pool),
        events=request.app.state.event_feed,
        authorization=request.headers.get("authorization"),
    )
