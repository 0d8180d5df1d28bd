"""GraphQL errors carry `extensions.code`; an error without one is a bug.

The codes are added where the response is made (app.api.app), which sees
every error: some (a document over the token limit) never reach a schema
extension.

Expected failures, classified by type: the domains' `AppError`s (their
code), a database failure (app.db.expected: UNAVAILABLE, LIMIT_EXCEEDED or
BAD_INPUT), a request the schema rejects (BAD_INPUT, or the LIMIT_EXCEEDED
its limit rules put in the error's extensions, app.api.runtime.limits). Anything
else is logged with its traceback and answered as INTERNAL_SERVER_ERROR
without its message (which may leak internals).
"""

import logging
import re

from graphql import GraphQLError
from strawberry.relay import GlobalIDValueError

from app import db
from app.api.runtime.limits import LIMIT_EXCEEDED, over_token_limit
from app.errors import AppError
from app.observe import UNAVAILABLE, UNEXPECTED, request_id

log = logging.getLogger("infragraph.api")

INTERNAL = "INTERNAL_SERVER_ERROR"
# graphql-core's hints, which name the schema's fields, types and arguments
_SUGGESTION = re.compile(r"\s*Did you mean .*$", re.DOTALL)


def _app_error(error: GraphQLError) -> AppError | None:
    original = error.original_error
    if isinstance(original, AppError):
        return original
    return db.expected(original) if original is not None else None


def code_of(error: GraphQLError) -> str | None:
    """The code of an expected error, None for a bug."""
    if (expected := _app_error(error)) is not None:
        return expected.code
    if isinstance(error.original_error, GlobalIDValueError):
        return "BAD_INPUT"
    if error.path is None:  # parsing, validation or variables: before any resolver ran
        code = (error.extensions or {}).get("code")
        return code or (LIMIT_EXCEEDED if over_token_limit(error) else "BAD_INPUT")
    return None


def coded(error: GraphQLError, *, suggestions: bool = True) -> GraphQLError:
    """The error with its code; without `suggestions` (a private schema), with no hint
    that names what the schema holds."""
    code = code_of(error)
    expected = _app_error(error)
    extensions = {**(error.extensions or {}), "code": code or INTERNAL}
    if expected is not None and expected.detail is not None:
        extensions["detail"] = expected.detail
    if code == "UNAVAILABLE":
        UNAVAILABLE.inc()
    if code is None:
        message = f"internal server error (request {request_id.get()})"
    else:
        message = expected.message if expected is not None else error.message
        if not suggestions:
            message = _SUGGESTION.sub("", message)
    return GraphQLError(
        message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=error.original_error,
        extensions=extensions,
    )


def log_unexpected(errors: list[GraphQLError]) -> None:
    for error in errors:
        if code_of(error) is None:
            UNEXPECTED.inc()
            log.error(
                "unexpected GraphQL error (a bug) [request %s]: %s",
                request_id.get(),
                error,
                exc_info=error.original_error,
            )
