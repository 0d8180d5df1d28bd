"""The Starlette-mountable GraphQL app: `/graphql` (POST, GET; GraphiQL for browsers).

Bodies and JSON variables are read by `app.jsonutil.read` (its limits) and
refused past `max_graphql_bytes` (413, before or while they stream in); an
answer past MAX_RESPONSE_BYTES is replaced by a LIMIT_EXCEEDED error (the cost
limit of app.api.limits keeps answers far below it: this is the backstop).
"""

from typing import Any, Literal

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse
from strawberry.types import ExecutionResult

from app import jsonutil
from app.api.context import Context, make_context
from app.api.errors import coded
from app.api.limits import LIMIT_EXCEEDED
from app.api.schema import schema
from app.config import MIB, Settings
from app.errors import BadInput, LimitExceeded

MAX_RESPONSE_BYTES = 64 * MIB


class GraphQLApp(GraphQL[Context, None]):
    def __init__(self, *args: Any, max_body: int, suggestions: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_body = max_body
        self.suggestions = suggestions  # "Did you mean ...?" in errors: a public schema only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        limit = self.max_body
        declared = next((v for k, v in scope["headers"] if k == b"content-length"), b"")
        if declared.isdigit() and int(declared) > limit:
            raise LimitExceeded(
                f"the body ({int(declared)} bytes) is over the limit of {limit} bytes",
                {"limit": limit},
            )
        received = 0

        async def bounded() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > limit:
                raise LimitExceeded(
                    f"the body is over the limit of {limit} bytes", {"limit": limit}
                )
            return message

        await super().__call__(scope, bounded, send)

    async def get_context(self, request: Request, response: Response) -> Context:  # type: ignore[override]
        return make_context(request, response)

    def parse_json(self, data: str | bytes) -> Any:
        try:
            return jsonutil.read(data)
        except jsonutil.JsonInputError as exc:
            raise BadInput(f"the request body is not accepted: {exc}") from None

    async def process_result(
        self, request: Request, result: ExecutionResult
    ) -> GraphQLHTTPResponse:
        if result.errors:
            # A new list: the validation cache may share the old one between requests.
            result.errors = [coded(error, suggestions=self.suggestions) for error in result.errors]
        return await super().process_result(request, result)

    def encode_json(self, data: object) -> bytes:
        encoded = jsonutil.dumps(data)  # orjson: fast on big pages, exact on big integers
        if len(encoded) <= MAX_RESPONSE_BYTES:
            return encoded
        message = f"the answer is {len(encoded)} bytes, over the limit of {MAX_RESPONSE_BYTES}"
        detail = {"bytes": len(encoded), "max": MAX_RESPONSE_BYTES}
        error = {"message": message, "extensions": {"code": LIMIT_EXCEEDED, "detail": detail}}
        return jsonutil.dumps({"data": None, "errors": [error]})


def graphql_route(settings: Settings, path: str = "/graphql") -> Route:
    """GraphiQL, introspection and suggestions in errors only when the schema is public
    (INFRAGRAPH_PUBLIC_SCHEMA)."""
    ide: Literal["graphiql"] | None = "graphiql" if settings.public_schema else None
    app = GraphQLApp(
        schema,
        graphql_ide=ide,
        max_body=settings.max_graphql_bytes,
        suggestions=settings.public_schema,
    )
    return Route(path, app)
