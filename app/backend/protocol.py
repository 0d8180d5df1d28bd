"""What Terraform and OpenTofu send: bodies with a Content-MD5, states, LockInfo.

A state body is read once, refused with 413 as soon as it is known to be too
big (from Content-Length before reading anything, else while it streams in),
its MD5 computed on the way in, kept in a temporary file when big; then parsed
once, a big one a resource at a time as the write goes (app/tfstate/stream.py).
"""

import base64
import binascii
import contextlib
from typing import Any

from starlette.requests import Request

from app.errors import BadInput, LimitExceeded
from app.graph.raw import Body, BodySpool
from app.http import declared_length
from app.jsonutil import JsonInputError, read
from app.tfstate import EncryptedState, EnvelopeError, ScannedState, StateError, parse_body
from app.tfstate.scan import scan_stream
from app.tfstate.skim import SKIM_MAX_BYTES, skim_document
from app.tfstate.stream import NotStreamable


def _content_md5(request: Request) -> bytes | None:
    header = request.headers.get("content-md5")
    if header is None:
        return None
    try:
        digest = base64.b64decode(header, validate=True)
    except binascii.Error:
        digest = b""
    if len(digest) != 16:
        raise BadInput(f"Content-MD5 is not a base64 MD5 digest: {header!r}")
    return digest


async def receive_body(request: Request, limit: int, memory_bytes: int) -> Body:
    """The request body, at most `limit` bytes (413 otherwise), checked against its
    Content-MD5 when one is sent (400 on a mismatch); held in memory up to `memory_bytes`,
    past that in a temporary file (close it): from the start when its declared length
    is."""
    expected = _content_md5(request)
    declared = declared_length(request.headers)
    if declared is not None and declared > limit:
        raise LimitExceeded(
            f"the body ({declared} bytes) is over the limit of {limit} bytes", {"limit": limit}
        )
    # declared bigger than `memory_bytes`: to disk from the first byte (not grown in
    # memory to `memory_bytes` and copied out, its pages left to the allocator)
    spool = BodySpool(0 if declared is not None and declared > memory_bytes else memory_bytes)
    try:
        async for chunk in request.stream():
            if spool.size + len(chunk) > limit:
                raise LimitExceeded(
                    f"the body is over the limit of {limit} bytes", {"limit": limit}
                )
            spool.write(chunk)
        body = spool.body()
    except BaseException:
        spool.body().close()
        raise
    if expected is not None and body.md5 != expected:
        body.close()
        raise BadInput(
            "Content-MD5 does not match the body",
            {
                "content_md5": base64.b64encode(expected).decode(),
                "body_md5": base64.b64encode(body.md5).decode(),
            },
        )
    return body


async def read_body(request: Request, limit: int) -> bytes:
    """A small request body (a LockInfo) as bytes: receive_body's checks."""
    body = await receive_body(request, limit, limit)
    try:
        return body.whole()
    finally:
        body.close()


def decode_state(body: Body, stream_over: int) -> ScannedState | EncryptedState:
    """Parse a POSTed state, or an OpenTofu encrypted state's envelope (CPU-bound: run
    it off the event loop). A state is skimmed (app/tfstate/skim.py) when it can be, up
    to SKIM_MAX_BYTES; one bigger, and over `stream_over` bytes, is read a resource at a
    time by the write (app/tfstate/stream.py) when it can be."""
    try:
        if body.size <= SKIM_MAX_BYTES:
            with contextlib.suppress(NotStreamable):
                return skim_document(body.whole())
        elif body.size > stream_over:
            with contextlib.suppress(NotStreamable):
                return scan_stream(body.reader)
        return parse_body(body.whole())
    except EnvelopeError as exc:
        raise BadInput(f"not a valid OpenTofu encrypted state: {exc}") from None
    except StateError as exc:
        raise invalid_state(exc) from None


def invalid_state(exc: StateError) -> BadInput:
    """What a POST answers for a state found invalid: when decoded, or by the write
    that normalizes the instances it does not keep (app/tfstate/scan.py)."""
    return BadInput(f"not a valid Terraform v4 state: {exc}")


def lock_info(body: bytes) -> dict[str, Any]:
    """A LOCK body: Terraform's LockInfo JSON object, which must carry a non-empty string ID."""
    try:
        info = read(body)
    except JsonInputError as exc:
        raise BadInput(f"LockInfo is not accepted: {exc}") from None
    if not isinstance(info, dict):
        raise BadInput("LockInfo must be a JSON object")
    lock_id = info.get("ID")
    if not isinstance(lock_id, str) or not lock_id:
        raise BadInput("LockInfo must have an 'ID': a non-empty string")
    return info


def unlock_request(body: bytes) -> tuple[str | None, dict[str, Any] | None]:
    """The lock ID an UNLOCK names (None: whatever lock is held) and its LockInfo.

    `terraform force-unlock` sends an empty body (it names no lock); OpenTofu's a
    LockInfo holding nothing but the ID; the holder's own unlock its full LockInfo.
    Whether the ID's lock is released is its holder's business (app/graph/locks.py).
    """
    if not body.strip():
        return None, None
    info = lock_info(body)
    return info["ID"], info
