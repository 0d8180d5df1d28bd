"""The root schema: Query, Mutation and Subscription composed from each domain's mixins.

A domain adds `class XQuery` in app/api/<domain>/queries.py and joins it here; who
may call each root field is app/api/access.py's (guarded below).
"""

from contextlib import aclosing
from typing import Any

import strawberry
from graphql import GraphQLError, GraphQLSyntaxError
from strawberry.schema.schema import StreamResult
from strawberry.types import ExecutionContext, ExecutionResult

from app.api.access import guard
from app.api.catalog.mutations import CatalogMutation
from app.api.catalog.queries import CatalogQuery
from app.api.configuration.mutations import ConfigurationMutation
from app.api.configuration.queries import ConfigurationQuery
from app.api.errors import coded, log_unexpected
from app.api.graph.mutations import GraphMutation
from app.api.graph.queries import GraphQuery
from app.api.graph.subscriptions import GraphSubscription
from app.api.iac.mutations import IacMutation
from app.api.iac.queries import IacQuery
from app.api.leases.mutations import LeasesMutation
from app.api.plans.mutations import PlansMutation
from app.api.plans.queries import PlansQuery
from app.api.policies.mutations import PolicyMutation
from app.api.policies.queries import PolicyQuery
from app.api.readers.mutations import ReadersMutation
from app.api.readers.queries import ReadersQuery
from app.api.runtime.execution import PlainFieldsExecutionContext
from app.api.runtime.limits import EXTENSIONS
from app.api.tokens.mutations import TokenMutation
from app.api.tokens.queries import TokenQuery
from app.api.webhooks.mutations import WebhookMutation
from app.api.webhooks.queries import WebhookQuery


@strawberry.type
class Query(
    GraphQuery,
    CatalogQuery,
    IacQuery,
    PolicyQuery,
    TokenQuery,
    ReadersQuery,
    WebhookQuery,
    PlansQuery,
    ConfigurationQuery,
):
    pass


@strawberry.type
class Mutation(
    GraphMutation,
    CatalogMutation,
    IacMutation,
    PolicyMutation,
    TokenMutation,
    ReadersMutation,
    WebhookMutation,
    PlansMutation,
    ConfigurationMutation,
    LeasesMutation,
):
    pass


@strawberry.type
class Subscription(GraphSubscription):
    pass


class Schema(strawberry.Schema):
    async def stream(self, *args: Any, **kwargs: Any) -> StreamResult:
        """Results over a websocket: errors with their codes, as app.api.app gives HTTP's."""
        return _coded(await super().stream(*args, **kwargs))

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        log_unexpected(errors)  # an expected error is the client's business, not the log's


async def _coded(results: StreamResult) -> StreamResult:
    async with aclosing(results):
        async for result in results:
            if isinstance(result, ExecutionResult) and result.errors:
                # a syntax error stays one: graphql-transport-ws closes the socket on it
                result.errors = [
                    e if isinstance(e, GraphQLSyntaxError) else coded(e) for e in result.errors
                ]
            yield result


schema = Schema(
    query=Query,
    mutation=Mutation,
    subscription=Subscription,
    extensions=EXTENSIONS,
    execution_context_class=PlainFieldsExecutionContext,
)
guard(schema)
