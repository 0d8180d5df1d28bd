"""The root schema: Query and Mutation composed from each domain's mixins.

A domain adds `class XQuery` in app/api/<domain>/queries.py and joins it here; who
may call each root field is app/api/access.py's (guarded below).
"""

import strawberry
from graphql import GraphQLError
from strawberry.types import ExecutionContext

from app.api.access import guard
from app.api.catalog.mutations import CatalogMutation
from app.api.catalog.queries import CatalogQuery
from app.api.errors import log_unexpected
from app.api.graph.mutations import GraphMutation
from app.api.graph.queries import GraphQuery
from app.api.iac.mutations import IacMutation
from app.api.iac.queries import IacQuery
from app.api.limits import EXTENSIONS
from app.api.policies.mutations import PolicyMutation
from app.api.policies.queries import PolicyQuery
from app.api.tokens.mutations import TokenMutation
from app.api.tokens.queries import TokenQuery


@strawberry.type
class Query(GraphQuery, CatalogQuery, IacQuery, PolicyQuery, TokenQuery):
    pass


@strawberry.type
class Mutation(GraphMutation, CatalogMutation, IacMutation, PolicyMutation, TokenMutation):
    pass


class Schema(strawberry.Schema):
    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        log_unexpected(errors)  # an expected error is the client's business, not the log's


schema = Schema(query=Query, mutation=Mutation, extensions=EXTENSIONS)
guard(schema)
