"""What Terraform and OpenTofu send: bodies with a Content-MD5, states, LockInfo.

A state body is read once, refused with 413 as soon as it is known to be too
big (from Content-Length before reading anything, else while it streams in),
its MD5 computed on the way in; then parsed once.
"""

import base64
import binascii
import hashlib
from typing import Any

from starlette.requests import Request

from app.errors import BadInput, LimitExceeded
from app.http import declared_length
from app.jsonutil import JsonInputError, read
from app.tfstate import EncryptedState, EnvelopeError, ScannedState, StateError, parse_body

# Go's zero time.Time, as a LockInfo built from only an ID marshals its "Created"
_ZERO_TIME = "0001-01-01T00:00:00Z"


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


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, at most `limit` bytes (413 otherwise), checked against its
    Content-MD5 when one is sent (400 on a mismatch)."""
    expected = _content_md5(request)
    declared = declared_length(request.headers)
    if declared is not None and declared > limit:
        raise LimitExceeded(
            f"the body ({declared} bytes) is over the limit of {limit} bytes", {"limit": limit}
        )
    chunks: list[bytes] = []
    size = 0
    digest = hashlib.md5()
    async for chunk in request.stream():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise LimitExceeded(f"the body is over the limit of {limit} bytes", {"limit": limit})
        if expected is not None:
            digest.update(chunk)
    if expected is not None and digest.digest() != expected:
        raise BadInput(
            "Content-MD5 does not match the body",
            {
                "content_md5": base64.b64encode(expected).decode(),
                "body_md5": base64.b64encode(digest.digest()).decode(),
            },
        )
    return b"".join(chunks)


def decode_state(body: bytes) -> ScannedState | EncryptedState:
    """Parse a POSTed state, or an OpenTofu encrypted state's envelope (CPU-bound: run
    it off the event loop)."""
    try:
        return parse_body(body)
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


def unlock_request(body: bytes) -> tuple[str | None, bool]:
    """The lock ID an UNLOCK names (None: any) and whether it is a force-unlock.

    `terraform force-unlock` sends an empty body, OpenTofu a LockInfo holding
    nothing but the ID: both force-unlock. The holder's own unlock sends its
    full LockInfo.
    """
    if not body.strip():
        return None, True
    info = lock_info(body)
    force = all(value in (None, "", _ZERO_TIME) for key, value in info.items() if key != "ID")
    return info["ID"], force
