"""POST /states/{name}/configurations: record the configuration of a plan's JSON
(`terraform show -json tfplan`) as the state's (`infragraph config push`): 201 with the
configuration version, new or the state's latest when its content is the same. The
plan role on the state suffices. Before the state backend's route, as the plans'."""

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from app import db
from app.access import Role
from app.auth import principal
from app.backend.protocol import receive_body
from app.configuration.parse import required_configuration
from app.configuration.store import PUSH, record_configuration
from app.errors import BadInput, UnsupportedMediaType
from app.http import json_response
from app.jsonutil import JsonInputError, read


async def post_configuration(request: Request) -> Response:
    name: str = request.path_params["name"]
    caller = principal(request)
    caller.require_state(Role.PLAN, name, f"push the configuration of state {name!r}")
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type != "application/json":
        raise UnsupportedMediaType(
            f"a plan is Content-Type: application/json, not {media_type or 'none'}",
            {"content_type": media_type or None},
        )
    limit = request.app.state.settings.max_document_bytes
    body = await receive_body(request, limit, limit)
    try:
        raw = body.whole()
    finally:
        body.close()
    try:
        document = read(raw)
    except JsonInputError as exc:
        raise BadInput(f"not a Terraform plan: {exc}") from None
    configuration = required_configuration(document)
    async with db.connection(request.app.state.pool) as conn:
        row, created = await record_configuration(
            conn, name, configuration, origin=PUSH, submitter=caller.name
        )
    return json_response(
        {
            "state": row["state_name"],
            "number": row["number"],
            "hash": row["hash"],
            "created": created,
            "modules": len(configuration.modules),
            "references": len(configuration.references),
        },
        201 if created else 200,
    )


def routes() -> list[Route]:
    return [Route("/states/{name:path}/configurations", post_configuration, methods=["POST"])]
