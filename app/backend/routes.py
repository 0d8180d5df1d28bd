"""The /states/{name} routes of Terraform's `http` backend.

    GET    200 with the bytes last written (Content-MD5 of them); 404 when none. To a
           token that may not plan the state but read its outputs: a v4 state of its
           outputs alone, marked by the header X-Infragraph-Reduced: outputs
    POST   [?ID=lock] store a new version
    DELETE [?ID=lock] delete the state and its history
    LOCK   /states/{name}[/lock]  body: LockInfo; 409 with the holder's LockInfo. A plan's
           (Operation OperationTypePlan) is shared: it never waits (app/leases/shared.py)
    UNLOCK /states/{name}[/lock]  the holder's LockInfo, or a force-unlock

With `?lease=ID` (the addresses a lease exports), GET, POST, LOCK and UNLOCK act under
that lease (app/leases/backend.py): its snapshot, merged writes, its own lock.

Who may (app.access), checked in `states` for every method: GET of the raw bytes
needs the plan role (they hold what GraphQL masks; an `iac:` state, which IaC redacts,
only read), and of the outputs alone a read token or a named output reader
(app/readers.py); POST and DELETE need the write role; LOCK and UNLOCK the write
role, or the plan role with a LockInfo whose Operation is a plan; a force-unlock
(an UNLOCK naming no lock) admin; all of them in the token's states. Who holds a lock
decides the rest (app/graph/locks.py). `iac:` states are IaC apply's alone: POST,
LOCK and DELETE of one are 403. A body that changes state must be `application/json`
(what Terraform and OpenTofu send): a browser's cross-site form post cannot be.

Bodies are read before a connection is taken, so no transaction waits on a
client; states are parsed off the event loop. Large POSTs (over
`large_write_bytes`, or of unknown length) run at most `max_large_writes` at
once: a parse holds several times its body in memory. Errors are answered by
the app's exception handlers (app.server).
"""

import asyncio
import base64
import contextlib
import dataclasses
import hashlib
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from app import db
from app.access import IAC_PREFIX, Principal, Role
from app.auth import principal
from app.backend.protocol import (
    decode_state,
    invalid_state,
    lock_info,
    read_body,
    receive_body,
    unlock_request,
)
from app.errors import (
    BadInput,
    Forbidden,
    Locked,
    MethodNotAllowed,
    NotFound,
    Unavailable,
    UnsupportedMediaType,
)
from app.graph import locks, raw, readers
from app.graph.raw import Body
from app.graph.write.version import Written
from app.http import declared_length, json_response
from app.leases import backend as leased
from app.leases import shared
from app.leases import store as leases
from app.observe import IMPORT_BYTES, LARGE_WRITES_REFUSED, LOCK_CONFLICTS, STATE_WRITES
from app.readers import Read, state_read
from app.tfstate import StateError
from app.tfstate.remote import Server

LOCK_INFO_LIMIT = 64 * 1024
MAX_NAME_LENGTH = 512


def _pool(request: Request) -> db.Pool:
    pool: db.Pool = request.app.state.pool
    return pool


def _has_control_characters(text: str) -> bool:
    return any(ord(c) < 32 or ord(c) == 127 for c in text)


def _lock_id(request: Request) -> str | None:
    lock_id = request.query_params.get("ID") or None
    if lock_id is not None and _has_control_characters(lock_id):
        raise BadInput("the lock ID contains control characters")
    return lock_id


def _lease(request: Request) -> str | None:
    return request.query_params.get("lease") or None


async def _get_leased(request: Request, name: str, lease: str) -> Response:
    async with db.connection(_pool(request)) as conn:
        found = await leased.renewed(conn, name, leased.lease_id_of(lease), principal(request))
        body = await leased.snapshot(conn, found)
    headers = {"Content-MD5": base64.b64encode(hashlib.md5(body).digest()).decode()}
    return Response(body, headers=headers, media_type="application/json")


async def get_state(request: Request, name: str) -> Response:
    if (lease := _lease(request)) is not None:
        return await _get_leased(request, name, lease)
    caller = principal(request)
    if not name.startswith(IAC_PREFIX) and not caller.may_plan(name):
        return await _get_outputs(request, caller, name)
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


async def _get_outputs(request: Request, caller: Principal, name: str) -> Response:
    """The state reduced to its outputs, for whoever may read them (app/readers.py)."""
    async with db.connection(_pool(request)) as conn:
        read = state_read(caller, name, await readers.readers_of(conn, name))
        if read is Read.NONE:  # the refusal a GET outside its states has always had
            caller.require_state(Role.READ, name, f"GET state {name!r}")
        body = await readers.reduced_state(
            conn, name, sensitive=read is Read.OUTPUTS, actor=caller.name
        )
    headers = {
        "Content-MD5": base64.b64encode(hashlib.md5(body).digest()).decode(),
        readers.REDUCED_HEADER: "outputs",
    }
    return Response(body, headers=headers, media_type="application/json")


class WriteSlots:
    """How many large state writes run now, of at most `limit`."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.busy = 0

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        if self.busy >= self.limit:
            LARGE_WRITES_REFUSED.inc()
            raise Unavailable(
                f"{self.busy} large state writes are running, the most at once; retry",
                {"max_large_writes": self.limit},
            )
        self.busy += 1
        try:
            yield
        finally:
            self.busy -= 1


def _write_slot(request: Request) -> contextlib.AbstractContextManager[None]:
    declared = declared_length(request.headers)
    if declared is not None and declared <= request.app.state.settings.large_write_bytes:
        return contextlib.nullcontext()
    slots: WriteSlots = request.app.state.large_writes
    return slots.slot()


async def post_state(request: Request, name: str) -> Response:
    lock_id = _lock_id(request)
    settings = request.app.state.settings
    with _write_slot(request):
        body = await receive_body(request, settings.max_state_bytes, settings.large_write_bytes)
        # the cyclic GC is off from here until the answer (app.process.StateWrites)
        try:
            if (lease := _lease(request)) is not None:
                return await _post_leased(request, name, lease, body)
            written = await _write(request, name, body, lock_id)
        finally:
            body.close()
    STATE_WRITES.labels("created" if written.created else "retried").inc()
    if written.created:
        IMPORT_BYTES.inc(body.size)
    return json_response({"name": name, "serial": written.serial, "created": written.created})


async def _write(request: Request, name: str, body: Body, lock_id: str | None) -> Written:
    stream_over = request.app.state.settings.large_write_bytes
    state = await asyncio.to_thread(decode_state, body, stream_over)
    async with db.connection(_pool(request)) as conn:
        try:
            return await locks.guarded_write(
                conn,
                name,
                body,
                lock_id,
                state=state,
                who=principal(request),
                keep_last=request.app.state.settings.prune_keep_last,
                servers=own_servers(request),
            )
        except StateError as exc:  # an instance the write normalized
            raise invalid_state(exc) from None


async def _post_leased(request: Request, name: str, lease: str, body: Body) -> Response:
    who = principal(request)
    async with db.connection(_pool(request)) as conn:
        found = await leased.renewed(conn, name, leased.lease_id_of(lease), who)
        try:
            merged = await leased.merged_write(
                conn,
                found,
                body,
                who=who,
                keep_last=request.app.state.settings.prune_keep_last,
                servers=own_servers(request),
            )
        except StateError as exc:
            raise invalid_state(exc) from None
    created = merged.written is not None and merged.written.created
    STATE_WRITES.labels("created" if created else "retried").inc()
    return json_response(
        {
            "name": name,
            "serial": merged.serial,
            "created": created,
            "merged": merged.changed,
            "outside": merged.outside,
        }
    )


def own_servers(request: Request) -> list[Server]:
    """This server's base URLs: the address the request was received on (the listening
    socket's, not the Host header a client chose) and INFRAGRAPH_PUBLIC_URLS; for a
    scoped writer, naming only the states it may read (a hidden state is a missing one)."""
    found: list[Server] = list(request.app.state.settings.public_urls)
    if (listening := request.scope.get("server")) is not None:
        host, port = listening
        found.append(Server.parse(f"{request.url.scheme}://{host}" + (f":{port}" if port else "")))
    caller = principal(request)
    if caller.patterns is None:
        return found
    return [dataclasses.replace(server, readable=caller.may_read) for server in found]


async def delete_state(request: Request, name: str) -> Response:
    if _lease(request) is not None:
        raise BadInput("a lease does not delete its state")
    lock_id = _lock_id(request)
    async with db.connection(_pool(request)) as conn:
        versions = await locks.guarded_delete(conn, name, lock_id, who=principal(request))
    return json_response({"name": name, "deleted_versions": versions})


PLAN_OPERATION = shared.PLAN_OPERATION


def _require_lock_role(request: Request, name: str, info: dict[str, Any] | None) -> None:
    """A plan token locks, and unlocks, for a plan only; anyone else needs write."""
    caller = principal(request)
    if caller.has(Role.WRITE) or (info is not None and info.get("Operation") == PLAN_OPERATION):
        return
    caller.require_state(Role.WRITE, name, f"{request.method} state {name!r} but for a plan")


async def lock_state(request: Request, name: str) -> Response:
    info = lock_info(await read_body(request, LOCK_INFO_LIMIT))
    _require_lock_role(request, name, info)
    who = principal(request)
    try:
        async with db.connection(_pool(request)) as conn:
            if (lease := _lease(request)) is not None:
                found = await leased.renewed(conn, name, leased.lease_id_of(lease), who)
                await leased.lock(conn, found, info)
            elif shared.is_plan(info):
                await shared.take(conn, name, info, who=who)
            else:
                await leases.lock_whole(conn, name, info, who=who)
    except Locked:
        LOCK_CONFLICTS.inc()
        raise
    return json_response(info)


async def unlock_state(request: Request, name: str) -> Response:
    lock_id, info = unlock_request(await read_body(request, LOCK_INFO_LIMIT))
    who = principal(request)
    if (lease := _lease(request)) is not None:
        async with db.connection(_pool(request)) as conn:
            found = await leased.renewed(conn, name, leased.lease_id_of(lease), who)
            await leased.unlock(conn, found, lock_id, who)
        return json_response({"name": name, "unlocked": True, "lease": lease})
    if lock_id is None:  # names no lock: whatever is held goes
        who.require(Role.ADMIN, f"force-unlock state {name!r}")
    _require_lock_role(request, name, info)
    async with db.connection(_pool(request)) as conn:  # a plan's lock, else the writer's
        released = await locks.unlock(conn, name, lock_id, who=who)
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


_IAC_WRITES = frozenset({"POST", "LOCK", "DELETE"})  # an `iac:` state's: IaC apply's alone
# The least role of each method but GET (LOCK and UNLOCK: the plan role's for a plan)
_NEEDS = {"POST": Role.WRITE, "DELETE": Role.WRITE, "LOCK": Role.PLAN, "UNLOCK": Role.PLAN}


def _check_access(request: Request, name: str) -> None:
    """Forbidden unless the caller may `request.method` state `name` (see the module)."""
    method = request.method
    doing = f"{method} state {name!r}"
    iac = name.startswith(IAC_PREFIX)
    if iac and method in _IAC_WRITES:
        raise Forbidden(
            f"{doing}: IaC states are written by IaC apply only (the HTTP backend reads them)",
            {"state": name},
        )
    caller = principal(request)
    if method == "GET" and not iac:
        caller.require(Role.READ, doing)  # which GET it gets: get_state
        return
    caller.require_state(Role.READ if method == "GET" else _NEEDS[method], name, doing)


def _check_media_type(request: Request) -> None:
    """A body that changes state is JSON: what a cross-site form cannot send."""
    if request.method == "GET":
        return
    has_body = request.headers.get("content-length", "0") != "0" or (
        "transfer-encoding" in request.headers
    )
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if has_body and media_type != "application/json":
        raise UnsupportedMediaType(
            f"a {request.method} body must be Content-Type: application/json, not "
            f"{media_type or 'none'}",
            {"content_type": media_type or None},
        )


async def states(request: Request) -> Response:
    """One endpoint for every method, so an unknown one gets a JSON 405 too."""
    handler = _HANDLERS.get(request.method)
    if handler is None:
        raise MethodNotAllowed(f"method {request.method} is not allowed on /states", [*_HANDLERS])
    name = _state_name(request)
    _check_access(request, name)
    _check_media_type(request)
    return await handler(request, name)


class _StatesApp:
    """`states` as an ASGI app: given a class, not a function, Starlette lets every method in."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await states(Request(scope, receive, send))
        await response(scope, receive, send)


def routes(middleware: Sequence[Middleware] = ()) -> list[Route]:
    """The state routes, inside `middleware` (the process's tuning, from app.server)."""
    return [Route("/states/{name:path}", _StatesApp(), middleware=middleware)]
