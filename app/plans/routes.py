"""POST /states/{name}/plans: submit a plan's JSON (`terraform show -json`), answered with
its analysis (app/plans/report.py), 201. A read of the state suffices. The route comes
before the state backend's, so a state whose name ends in "/plans" is not POSTed to here
by Terraform's backend (which never POSTs to such a path for another name)."""

import asyncio
import contextlib
from uuid import UUID

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from app import db
from app.access import Role
from app.auth import principal
from app.configuration.store import PLAN, record_configuration
from app.errors import BadInput, LimitExceeded, UnsupportedMediaType
from app.http import declared_length, json_response
from app.jsonutil import JsonInputError
from app.plans.document import read_plan
from app.plans.impact import Member, impact
from app.plans.parse import ParsedPlan
from app.plans.report import plan_report
from app.plans.store import current_version, parsed_impact_addresses, submit_plan


async def _body(request: Request, limit: int) -> bytes:
    """The body, at most `limit` bytes (413 otherwise): held whole, it is parsed whole."""
    declared = declared_length(request.headers)
    if declared is not None and declared > limit:
        raise LimitExceeded(
            f"the body ({declared} bytes) is over the limit of {limit} bytes", {"limit": limit}
        )
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise LimitExceeded(f"the body is over the limit of {limit} bytes", {"limit": limit})
        chunks.append(chunk)
    return b"".join(chunks)


async def post_plan(request: Request) -> Response:
    name: str = request.path_params["name"]
    caller = principal(request)
    caller.require_state(Role.READ, name, f"submit a plan of state {name!r}")
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type != "application/json":
        raise UnsupportedMediaType(
            f"a plan is Content-Type: application/json, not {media_type or 'none'}",
            {"content_type": media_type or None},
        )
    raw = await _body(request, request.app.state.settings.max_document_bytes)
    try:
        parsed, configuration = read_plan(raw)
    except JsonInputError as exc:
        raise BadInput(f"not a Terraform plan: {exc}") from None
    del raw  # the analysis holds what it keeps of it
    pool = request.app.state.pool
    # The impact is walked beside the submission, on a connection of its own (PostgreSQL
    # walks while the server writes the plan), from the state's current version; when
    # another write lands in between, it is walked again from the plan's.
    walk = asyncio.ensure_future(_walk(pool, name, parsed, caller.patterns))
    try:
        async with db.connection(pool) as conn:
            plan = await submit_plan(conn, name, parsed, submitter=caller.name)
            if configuration is not None and caller.may_plan(name):
                await record_configuration(
                    conn, name, configuration, origin=PLAN, submitter=caller.name
                )
    except BaseException:
        walk.cancel()
        with contextlib.suppress(BaseException):
            await walk
        raise
    version_id, members = await walk
    # walked from another version than the plan's: walked again, by plan_report
    walked = members if version_id == plan["base_version_id"] else None
    async with db.connection(pool) as conn:
        report = await plan_report(conn, plan, readable=caller.patterns, members=walked)
    return json_response(report, 201)


async def _walk(
    pool: db.Pool, name: str, parsed: ParsedPlan, readable: list[str] | None
) -> tuple[UUID | None, list[Member]]:
    """The impact of a plan across states from the current version of state `name`, and
    that version's id."""
    async with db.connection(pool) as conn:
        version_id = await current_version(conn, name)
        members = await impact(
            conn,
            version_id,
            parsed_impact_addresses(parsed),
            cross_states=True,
            readable=readable,
        )
    return version_id, members


def routes() -> list[Route]:
    return [Route("/states/{name:path}/plans", post_plan, methods=["POST"])]
