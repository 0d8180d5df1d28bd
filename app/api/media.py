"""Which media type a GraphQL answer over HTTP goes in, and its status (pure).

GraphQL over HTTP defines `application/graphql-response+json`: a request that fails
before execution (it does not parse, does not validate, or its variables do not
coerce) is answered with a 4xx status and no `data` entry, so a client tells it from
a result by the status alone. Clients that ask for it in `Accept` (at least as much as
for `application/json`) get it; every other client (`application/json`, `*/*`, no
`Accept`) keeps `application/json`, where every GraphQL answer is a 200 with `data`.
"""

from strawberry.types import ExecutionResult
from strawberry.types.execution import PreExecutionError

GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"
REQUEST_ERROR_STATUS = 400


def _quality(params: list[str]) -> float:
    for param in params:
        key, _, value = param.partition("=")
        if key.strip().lower() == "q":
            try:
                return min(max(float(value.strip()), 0.0), 1.0)
            except ValueError:
                return 0.0
    return 1.0


def response_media_type(accept: str | None) -> str:
    """GRAPHQL_RESPONSE when `accept` asks for it with a quality above 0 and at least
    that of application/json (or application/*, */*); JSON otherwise."""
    wanted = 0.0
    legacy = 0.0
    for entry in (accept or "").split(","):
        media, *params = entry.split(";")
        media = media.strip().lower()
        if media == GRAPHQL_RESPONSE:
            wanted = max(wanted, _quality(params))
        elif media in (JSON, "application/*", "*/*"):
            legacy = max(legacy, _quality(params))
    return GRAPHQL_RESPONSE if wanted > 0 and wanted >= legacy else JSON


def is_request_error(result: ExecutionResult) -> bool:
    """Whether the request failed before execution: parse or validation errors
    (Strawberry's PreExecutionError), or variables that do not coerce (no data, and
    no error at a field's path, which every execution error has)."""
    if isinstance(result, PreExecutionError):
        return True
    return (
        result.data is None
        and bool(result.errors)
        and all(error.path is None for error in result.errors or ())
    )
