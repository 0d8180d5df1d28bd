"""JSON responses of the REST routes, errors included: {"error", "code", "detail"}."""

from collections.abc import Mapping
from typing import Any

from starlette.responses import Response

from app import jsonutil
from app.errors import AppError, Locked


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
