"""The /states/{name} routes of Terraform's `http` backend.

    GET    200 with the bytes last written (Content-MD5 of them); 404 when none
    POST   [?ID=lock] store a new version
    DELETE [?ID=lock] delete the state and its history
    LOCK   /states/{name}[/lock]  body: LockInfo; 409 with the holder's LockInfo
    UNLOCK /states/{name}[/lock]  the holder's LockInfo, or a force-unlock

Bodies are read before a connection is taken, so no transaction waits on a
client; states are parsed off the event loop.
"""

import asyncio
import base64
from collections.abc import Awaitable, Callable

import asyncpg
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from app import db
from app.auth import actor
from app.backend.protocol import decode_state, lock_info, read_body, unlock_request
from app.errors import AppError, BadInput, MethodNotAllowed, NotFound, Unavailable
from app.graph import locks, raw
from app.graph.store import Written
from app.http import error_response, json_response
from app.jsonutil import gc_paused

LOCK_INFO_LIMIT = 64 * 1024
MAX_NAME_LENGTH = 512


def _pool(request: Request) -> asyncpg.Pool:
    pool: asyncpg.Pool = request.app.state.pool
    return pool


def _has_control_characters(text: str) -> bool:
    return any(ord(c) < 32 or ord(c) == 127 for c in text)


def _lock_id(request: Request) -> str | None:
    lock_id = request.query_params.get("ID") or None
    if lock_id is not None and _has_control_characters(lock_id):
        raise BadInput("the lock ID contains control characters")
    return lock_id


async def get_state(request: Request, name: str) -> Response:
    async with db.connection(_pool(request)) as conn:
        version = await raw.raw_version(conn, name)
    if version is None:
        raise NotFound(f"no state {name!r}")
    headers = {"Content-MD5": base64.b64encode(version.md5).decode()}
    if version.body is not None:
        return Response(version.body, headers=headers, media_type="application/json")
    headers["Content-Length"] = str(version.size)
    return StreamingResponse(
        raw.stream_raw(_pool(request), version), headers=headers, media_type="application/json"
    )


async def post_state(request: Request, name: str) -> Response:
    lock_id = _lock_id(request)
    body = await read_body(request, request.app.state.settings.max_state_bytes)
    # A parsed state is millions of objects that form no cycle: with the cyclic GC off
    # until they are freed (when _write returns), no collection walks them, which would
    # cost more than half as much as parsing them.
    with gc_paused():
        written = await _write(request, name, body, lock_id)
    return json_response({"name": name, "serial": written.serial, "created": written.created})


async def _write(request: Request, name: str, body: bytes, lock_id: str | None) -> Written:
    state = await asyncio.to_thread(decode_state, body)
    async with db.connection(_pool(request)) as conn:
        return await locks.guarded_write(
            conn,
            name,
            body,
            lock_id,
            state=state,
            actor=actor(request),
            keep_last=request.app.state.settings.prune_keep_last,
        )


async def delete_state(request: Request, name: str) -> Response:
    lock_id = _lock_id(request)
    async with db.connection(_pool(request)) as conn:
        versions = await locks.guarded_delete(conn, name, lock_id, actor=actor(request))
    return json_response({"name": name, "deleted_versions": versions})


async def lock_state(request: Request, name: str) -> Response:
    info = lock_info(await read_body(request, LOCK_INFO_LIMIT))
    async with db.connection(_pool(request)) as conn:
        await locks.lock(conn, name, info, actor=actor(request))
    return json_response(info)


async def unlock_state(request: Request, name: str) -> Response:
    lock_id, force = unlock_request(await read_body(request, LOCK_INFO_LIMIT))
    async with db.connection(_pool(request)) as conn:
        released = await locks.unlock(conn, name, lock_id, force=force, actor=actor(request))
    return json_response({"name": name, "unlocked": released})


_HANDLERS: dict[str, Callable[[Request, str], Awaitable[Response]]] = {
    "GET": get_state,
    "POST": post_state,
    "DELETE": delete_state,
    "LOCK": lock_state,
    "UNLOCK": unlock_state,
}


def _state_name(request: Request) -> str:
    name: str = request.path_params["name"]
    if request.method in ("LOCK", "UNLOCK"):
        name = name.removesuffix("/lock")
    if not name:
        raise BadInput("the state name is empty")
    if len(name) > MAX_NAME_LENGTH:
        raise BadInput(f"the state name is longer than {MAX_NAME_LENGTH} characters")
    if _has_control_characters(name):
        raise BadInput("the state name contains control characters")
    return name


async def states(request: Request) -> Response:
    """One endpoint for every method, so an unknown one gets a JSON 405 too."""
    handler = _HANDLERS.get(request.method)
    try:
        if handler is None:
            raise MethodNotAllowed(f"method {request.method} is not allowed on /states")
        return await handler(request, _state_name(request))
    except MethodNotAllowed as exc:
        return error_response(exc, {"Allow": ", ".join(_HANDLERS)})
    except AppError as exc:
        return error_response(exc)
    except asyncpg.QueryCanceledError as exc:
        return error_response(Unavailable(f"the database gave up: {exc}; retry"))
    except ClientDisconnect:
        return Response(status_code=400)  # nobody is left to read it


class _StatesApp:
    """`states` as an ASGI app: given a class, not a function, Starlette lets every method in."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await states(Request(scope, receive, send))
        await response(scope, receive, send)


def routes() -> list[Route]:
    return [Route("/states/{name:path}", _StatesApp())]
