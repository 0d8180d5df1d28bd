"""Expected failures of graph operations; the HTTP and GraphQL layers map them to codes."""

from typing import Any


class GraphError(Exception):
    code = "BAD_INPUT"
    status = 400

    def __init__(self, message: str, detail: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class BadInput(GraphError):
    code = "BAD_INPUT"
    status = 400


class NotFound(GraphError):
    code = "NOT_FOUND"
    status = 404


class Conflict(GraphError):
    code = "CONFLICT"
    status = 409


class Locked(Conflict):
    """The state is locked by someone else; `detail` is the holder's LockInfo."""

    code = "LOCKED"


class Unauthenticated(GraphError):
    code = "UNAUTHENTICATED"
    status = 401


class LimitExceeded(GraphError):
    code = "LIMIT_EXCEEDED"
    status = 413


class StalePlan(Conflict):
    """An IaC apply whose reviewed plan hash no longer matches a fresh plan."""

    code = "STALE_PLAN"
