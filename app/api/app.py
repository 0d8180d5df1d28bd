"""The Starlette-mountable GraphQL app: `/graphql` (POST, GET; GraphiQL for browsers)."""

from typing import Literal

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse
from strawberry.types import ExecutionResult

from app import jsonutil
from app.api.context import Context, make_context
from app.api.errors import coded
from app.api.schema import schema
from app.config import Settings


class GraphQLApp(GraphQL[Context, None]):
    async def get_context(self, request: Request, response: Response) -> Context:  # type: ignore[override]
        return make_context(request, response)

    async def process_result(
        self, request: Request, result: ExecutionResult
    ) -> GraphQLHTTPResponse:
        if result.errors:
            # A new list: the validation cache may share the old one between requests.
            result.errors = [coded(error) for error in result.errors]
        return await super().process_result(request, result)

    def encode_json(self, data: object) -> bytes:
        return jsonutil.dumps(data)  # orjson: fast on big pages, exact on big integers


def graphql_route(settings: Settings, path: str = "/graphql") -> Route:
    """GraphiQL and introspection only when the schema is public (INFRAGRAPH_PUBLIC_SCHEMA)."""
    ide: Literal["graphiql"] | None = "graphiql" if settings.public_schema else None
    return Route(path, GraphQLApp(schema, graphql_ide=ide))
