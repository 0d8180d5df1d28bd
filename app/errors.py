"""Expected failures, shared by every domain; the HTTP and GraphQL layers map them to codes."""

from typing import Any


class AppError(Exception):
    code = "BAD_INPUT"
    status = 400

    def __init__(self, message: str, detail: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail

    def headers(self) -> dict[str, str]:
        """HTTP headers a REST answer of this error carries."""
        return {}


class BadInput(AppError):
    code = "BAD_INPUT"
    status = 400


class NotFound(AppError):
    code = "NOT_FOUND"
    status = 404


class Conflict(AppError):
    code = "CONFLICT"
    status = 409


class Locked(Conflict):
    """The state is locked by someone else; `detail` is the holder's LockInfo."""

    code = "LOCKED"


class LeaseConflict(Conflict):
    """A lease's footprint overlaps another live lease's, or a leased write changes what
    another writer changed since its snapshot; `detail` names the addresses and leases."""

    code = "LEASE_CONFLICT"


class Unauthenticated(AppError):
    code = "UNAUTHENTICATED"
    status = 401


class Forbidden(AppError):
    """Authenticated, but the token's role or scope does not allow it; the message says why."""

    code = "FORBIDDEN"
    status = 403


class UnsupportedMediaType(AppError):
    code = "UNSUPPORTED_MEDIA_TYPE"
    status = 415


class LimitExceeded(AppError):
    code = "LIMIT_EXCEEDED"
    status = 413


class StalePlan(Conflict):
    """An IaC apply whose reviewed plan hash no longer matches a fresh plan, or a lease
    asked for with a Terraform plan not made from the state's current version."""

    code = "STALE_PLAN"


class MethodNotAllowed(AppError):
    """`detail` is the list of allowed methods."""

    code = "METHOD_NOT_ALLOWED"
    status = 405

    def headers(self) -> dict[str, str]:
        return {"Allow": ", ".join(self.detail)}


class Unavailable(AppError):
    """The database is down, full or gave up on the request, or the server is at a
    cap: retry later (Terraform retries a 5xx)."""

    code = "UNAVAILABLE"
    status = 503
    retry_after_s = 1

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after_s)}
