"""JSON responses of the REST routes, errors included: {"error", "code", "detail"}."""

from collections.abc import Mapping
from typing import Any

from starlette.responses import Response

from app import jsonutil
from app.errors import AppError, Locked


def declared_length(headers: Mapping[str, str]) -> int | None:
    """The Content-Length a request declares, or None when absent or not a number
    (ASCII digits only: str.isdigit() also accepts "²", which int() refuses)."""
    declared = headers.get("content-length", "")
    return int(declared) if declared.isascii() and declared.isdigit() else None


def json_response(
    content: Any, status_code: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return Response(jsonutil.dumps(content), status_code, headers, media_type="application/json")


def error_response(exc: AppError, headers: Mapping[str, str] | None = None) -> Response:
    body = {"error": exc.message, "code": exc.code, "detail": exc.detail}
    if isinstance(exc, Locked):
        # Terraform and OpenTofu read the holder's LockInfo from the top level of a 409
        body = {**exc.detail, **body}
    return json_response(body, exc.status, {**exc.headers(), **(headers or {})})
