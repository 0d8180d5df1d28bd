"""Expected failures of graph operations; the HTTP and GraphQL layers map them to codes."""

from typing import Any


class GraphError(Exception):
    code = "BAD_INPUT"
    status = 400

    def __init__(self, message: str, detail: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class NotFound(GraphError):
    code = "NOT_FOUND"
    status = 404


class Conflict(GraphError):
    code = "CONFLICT"
    status = 409
