"""GET /scopes/{scope}/tables/iac/state[?system=crm]: the public IaC state view as JSON.

A list of {system, resource_type, ref, resource_id, table_id, updated_at}, never the
last-applied spec (iac.md, "State"); an unknown scope is a 404 JSON error, and so is a
scope the token does not touch (app.access).
"""

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from app import db
from app.auth import principal
from app.errors import NotFound
from app.http import json_response
from app.iac import service


async def iac_state(request: Request) -> Response:
    pool: db.Pool = request.app.state.pool
    system = request.query_params.get("system") or None
    slug = request.path_params["scope"]
    if not principal(request).may_touch_scope(slug):
        raise NotFound(f"no scope {slug!r}")
    async with db.connection(pool) as conn:
        rows = await service.state(conn, slug, system)
    return json_response(rows)


def routes() -> list[Route]:
    return [Route("/scopes/{scope}/tables/iac/state", iac_state, methods=["GET"])]
