"""The Starlette-mountable GraphQL app: `/graphql` (POST, GET; GraphiQL for browsers;
subscriptions over a graphql-transport-ws websocket), and GraphiQL's files at `/graphiql/`.

GraphiQL is served from its release files shipped in the package (graphiql/static,
tools/vendor_graphiql.sh copies them from npm): a browser without internet gets it
too. Its page allows scripts, styles and connections to this server only (GRAPHIQL_CSP).

Bodies and JSON variables are read by `app.jsonutil.read` (its limits) and
refused past `max_graphql_bytes` (413, before or while they stream in); an
answer past MAX_RESPONSE_BYTES is replaced by a LIMIT_EXCEEDED error (the cost
limit of app.api.runtime.limits keeps answers far below it: this is the backstop).

Subscriptions are served over the websocket only: one sent over HTTP (POST, or GET) is
refused before it runs with a METHOD_NOT_ALLOWED error that names the transport
(SUBSCRIPTION_OVER_HTTP), a request error like any other (below).

A client whose Accept asks for `application/graphql-response+json` is answered in that
media type, a request that fails before execution with 400 and no `data` (app.api.media);
every other client gets `application/json` and a 200 for every GraphQL answer.

The websocket is also at DASHBOARD_SOCKET (`/ui/live`), where the dashboard's pages
subscribe. With tokens configured, a websocket that came without an Authorization header
(browsers cannot set one) must authenticate in its `connection_init` payload:
{"authorization": "Bearer <token>"} (or Basic); else it is closed with 4403, or with
4408 when no connection_init comes soon (app.api.ws, which also closes a socket whose
token is revoked or expires).
"""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from cross_web import AsyncHTTPRequestAdapter
from graphql import GraphQLError
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import Message, Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError, MissingQueryError
from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData
from strawberry.http.base import BaseRequestProtocol
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types import ExecutionResult
from strawberry.types.execution import PreExecutionError
from strawberry.types.graphql import OperationType

from app import db, jsonutil
from app.access import UNVERIFIED
from app.api.context import Context, make_context
from app.api.errors import coded
from app.api.media import (
    GRAPHQL_RESPONSE,
    REQUEST_ERROR_STATUS,
    is_request_error,
    response_media_type,
)
from app.api.runtime.limits import LIMIT_EXCEEDED
from app.api.schema import schema
from app.api.ws import CONNECTION_INIT_WAIT, TextWebSocket, WatchedHandler
from app.auth import identify
from app.config import MIB, Settings
from app.errors import BadInput, Forbidden, LimitExceeded, Unauthenticated, Unavailable

MAX_RESPONSE_BYTES = 64 * MIB
# The same websocket as /graphql, for the dashboard's live pages: a browser sends the
# Basic credentials it holds for a page to the paths under that page's directory only,
# and a page under /ui/ is where /graphql is not.
DASHBOARD_SOCKET = "/ui/live"
GRAPHIQL_DIR = Path(__file__).resolve().parent / "graphiql"
GRAPHIQL_PAGE = (GRAPHIQL_DIR / "page.html").read_text()
# Nothing from another host. GraphiQL sets inline styles (React's style props) and its
# stylesheet embeds its fonts and icons as data: URLs; 'self' also covers the websocket
# to the same host and port in today's browsers.
GRAPHIQL_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "font-src 'self' data:; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'"
)

SUBSCRIPTION_OVER_HTTP = (
    "subscriptions need the websocket transport (graphql-transport-ws on /graphql), "
    "not HTTP {method}"
)


def _over_http(method: str) -> PreExecutionError:
    """The answer to a subscription sent over HTTP: a request error, coded."""
    error = GraphQLError(
        SUBSCRIPTION_OVER_HTTP.format(method=method),
        extensions={
            "code": "METHOD_NOT_ALLOWED",
            "detail": {"transport": GRAPHQL_TRANSPORT_WS_PROTOCOL, "method": method},
        },
    )
    return PreExecutionError(data=None, errors=[error])


class GraphQLApp(GraphQL[Context, None]):
    websocket_adapter_class = TextWebSocket
    graphql_transport_ws_handler_class = WatchedHandler

    def __init__(self, settings: Settings) -> None:
        """GraphiQL, introspection and suggestions in errors only when the schema is public
        (INFRAGRAPH_PUBLIC_SCHEMA)."""
        ide: Literal["graphiql"] | None = "graphiql" if settings.public_schema else None
        super().__init__(
            schema,
            graphql_ide=ide,
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
            connection_init_wait_timeout=CONNECTION_INIT_WAIT,
            allowed_origins=settings.cors_origins,  # websockets from pages elsewhere
        )
        self.max_body = settings.max_graphql_bytes
        self.suggestions = settings.public_schema  # "Did you mean ...?" in errors
        self.tokens: Mapping[str, str] = settings.api_tokens

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

    async def execute_single(
        self,
        request: Request,
        request_adapter: AsyncHTTPRequestAdapter,
        sub_response: Response,
        context: Context,
        root_value: None,
        request_data: GraphQLRequestData,
    ) -> ExecutionResult:
        """Queries and mutations; a subscription over HTTP is refused before it runs
        (Strawberry would run it as a query: its field has no value there)."""
        method = request_adapter.method
        try:
            return await self.schema.execute(
                request_data.query,
                root_value=root_value,
                variable_values=request_data.variables,
                context_value=context,
                operation_name=request_data.operation_name,
                allowed_operation_types=OperationType.from_http(method)
                - {OperationType.SUBSCRIPTION},
                operation_extensions=request_data.extensions,
            )
        except InvalidOperationTypeError as exc:
            if exc.operation_type is OperationType.SUBSCRIPTION:
                return _over_http(method)
        except (CannotGetOperationTypeError, MissingQueryError):
            pass
        # anything else Strawberry refuses, as Strawberry answers it
        return await super().execute_single(
            request, request_adapter, sub_response, context, root_value, request_data
        )

    def should_render_graphql_ide(self, request: BaseRequestProtocol) -> bool:
        """Also a browser opening a link with ?query= (GraphiQL starts with that query);
        any other GET with a query runs it."""
        opened = request.method == "GET" and "text/html" in request.headers.get("accept", "")
        return (opened and self.graphql_ide is not None) or super().should_render_graphql_ide(
            request
        )

    async def render_graphql_ide(self, request: Request) -> Response:
        return HTMLResponse(GRAPHIQL_PAGE, headers={"Content-Security-Policy": GRAPHIQL_CSP})

    async def get_context(
        self, request: Request | WebSocket, response: Response | WebSocket
    ) -> Context:
        return make_context(request, response)

    async def on_ws_connect(self, context: Context) -> None:
        """A websocket that came without a token shows one in connection_init's payload,
        identified as a header's would be (database tokens, expiry, revocation)."""
        if context.principal is not UNVERIFIED:
            return
        params = context.connection_params
        shown = params.get("authorization") if isinstance(params, dict) else None
        authorization = shown if isinstance(shown, str) else None
        try:
            caller = await identify(self.tokens, context.token_cache, authorization)
        except (Unauthenticated, Forbidden, Unavailable) as exc:
            context.refusal = exc.message  # the close frame's reason (app.api.ws)
            raise ConnectionRejectionError() from None
        except db.ERROR_TYPES:
            raise ConnectionRejectionError() from None
        context.identified(caller, authorization)

    def decode_json(self, data: str | bytes) -> object:
        """A websocket message, read as a body is: one refused is not JSON (closed, 4400)."""
        try:
            return jsonutil.read(data)
        except jsonutil.JsonInputError as exc:
            raise json.JSONDecodeError(str(exc), "", 0) from None

    def parse_json(self, data: str | bytes) -> Any:
        try:
            return jsonutil.read(data)
        except jsonutil.JsonInputError as exc:
            raise BadInput(f"the request body is not accepted: {exc}") from None

    async def get_sub_response(self, request: Request | WebSocket) -> Response:
        sub_response = await super().get_sub_response(request)
        if isinstance(request, Request):  # process_result sets its media type and status
            request.state.graphql_sub_response = sub_response
        return sub_response

    async def process_result(
        self, request: Request, result: ExecutionResult
    ) -> GraphQLHTTPResponse:
        if result.errors:
            # A new list: the validation cache may share the old one between requests.
            result.errors = [coded(error, suggestions=self.suggestions) for error in result.errors]
        processed = await super().process_result(request, result)
        sub_response: Response | None = getattr(request.state, "graphql_sub_response", None)
        if sub_response and response_media_type(request.headers.get("accept")) == GRAPHQL_RESPONSE:
            sub_response.media_type = GRAPHQL_RESPONSE
            if is_request_error(result):
                sub_response.status_code = REQUEST_ERROR_STATUS
                processed.pop("data", None)  # not executed: no data entry at all
        return processed

    def create_response(
        self,
        response_data: GraphQLHTTPResponse | list[GraphQLHTTPResponse],
        sub_response: Response,
    ) -> Response:
        response = super().create_response(response_data, sub_response)
        if sub_response.media_type:
            response.headers["content-type"] = sub_response.media_type
        return response

    def encode_json(self, data: object) -> bytes:
        encoded = jsonutil.dumps(data)  # orjson: fast on big pages, exact on big integers
        if len(encoded) <= MAX_RESPONSE_BYTES:
            return encoded
        message = f"the answer is {len(encoded)} bytes, over the limit of {MAX_RESPONSE_BYTES}"
        detail = {"bytes": len(encoded), "max": MAX_RESPONSE_BYTES}
        error = {"message": message, "extensions": {"code": LIMIT_EXCEEDED, "detail": detail}}
        return jsonutil.dumps({"data": None, "errors": [error]})


def graphql_routes(settings: Settings, path: str = "/graphql") -> list[BaseRoute]:
    """`path` over HTTP and websocket, the websocket at DASHBOARD_SOCKET too; GraphiQL's
    files only when the schema is public."""
    app = GraphQLApp(settings)
    routes: list[BaseRoute] = [
        Route(path, app),
        WebSocketRoute(path, app),
        WebSocketRoute(DASHBOARD_SOCKET, app),
    ]
    if settings.public_schema:
        routes.append(Mount("/graphiql", StaticFiles(directory=GRAPHIQL_DIR / "static")))
    return routes
