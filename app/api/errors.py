"""GraphQL errors carry `extensions.code`; an error without one is a bug.

The codes are added where the response is made (app.api.app), which sees
every error: some (a document over the token limit) never reach a schema
extension.

Expected failures are the graph's `AppError`s (their code), a request the
schema rejects (BAD_INPUT, or LIMIT_EXCEEDED for the size limits) and a
statement cancelled by the statement timeout (LIMIT_EXCEEDED). Anything
else is logged with its traceback and answered as INTERNAL_SERVER_ERROR
without its message (which may leak internals).
"""

import logging
import re

import asyncpg
from graphql import GraphQLError
from strawberry.relay import GlobalIDValueError

from app.errors import AppError

log = logging.getLogger("infragraph.api")

INTERNAL = "INTERNAL_SERVER_ERROR"
# The messages of the size limits (see limits.py), pinned by tests/api/test_errors.py.
_LIMITS = re.compile(
    r"exceeds maximum operation depth|aliases found\. Allowed|contains more than \d+ tokens"
    r"|the document expands to"
)


def code_of(error: GraphQLError) -> str | None:
    """The code of an expected error, None for a bug."""
    original = error.original_error
    if isinstance(original, AppError):
        return original.code
    if isinstance(original, asyncpg.QueryCanceledError):
        return "LIMIT_EXCEEDED"
    if isinstance(original, GlobalIDValueError):
        return "BAD_INPUT"
    if error.path is None:  # parsing, validation or variables: before any resolver ran
        return "LIMIT_EXCEEDED" if _LIMITS.search(error.message) else "BAD_INPUT"
    return None


def coded(error: GraphQLError) -> GraphQLError:
    code = code_of(error)
    original = error.original_error
    extensions = {**(error.extensions or {}), "code": code or INTERNAL}
    if isinstance(original, AppError) and original.detail is not None:
        extensions["detail"] = original.detail
    return GraphQLError(
        error.message if code else "internal server error",
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=original,
        extensions=extensions,
    )


def log_unexpected(errors: list[GraphQLError]) -> None:
    for error in errors:
        if code_of(error) is None:
            log.error("unexpected GraphQL error (a bug): %s", error, exc_info=error.original_error)
