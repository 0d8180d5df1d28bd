"""GET /scopes/{scope}/tables/iac/state[?system=crm]: the public IaC state view as JSON.

A list of {system, resource_type, ref, resource_id, table_id, updated_at}, never the
last-applied spec (iac.md, "State"); an unknown scope is a 404 JSON error.
"""

import asyncpg
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from app import db
from app.http import json_response
from app.iac import service


async def iac_state(request: Request) -> Response:
    pool: asyncpg.Pool = request.app.state.pool
    system = request.query_params.get("system") or None
    async with db.connection(pool) as conn:
        rows = await service.state(conn, request.path_params["scope"], system)
    return json_response(rows)


def routes() -> list[Route]:
    return [Route("/scopes/{scope}/tables/iac/state", iac_state, methods=["GET"])]
