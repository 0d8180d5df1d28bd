"""schemathesis generates GraphQL queries and mutations from the schema: a bounded
number of examples per root field, and not one server error (no 5xx, no
INTERNAL_SERVER_ERROR, every error coded, no traceback in the server log: the
fixture's rule). Its own GraphQL check is not used: it counts every resolver
error whose code it does not know (NOT_FOUND, BAD_INPUT) as a server error."""

from collections.abc import Iterator

import httpx
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings

from tests.helpers.graphql_fuzz import graphql_schema
from tests.helpers.live_server import LiveServer, live_server
from tests.helpers.ops import CODES

pytestmark = pytest.mark.slow  # starts servers of its own

EXAMPLES = 5  # per root field: about 250 requests in all
# Every call is the admin's: a generated createToken must not close the server to the
# calls after it (a server that has a token answers only tokens).
ADMIN = ("admin", "schemathesis-admin-secret")


# The exported SDL, which a test keeps equal to the served schema.
schema = graphql_schema()


@pytest.fixture(scope="module")
def server(own_database: str) -> Iterator[LiveServer]:
    """A server on a database of its own, whose tokens the generated mutations make and
    revoke without touching another module's."""
    with live_server(own_database, {"INFRAGRAPH_API_TOKENS": ":".join(ADMIN)}) as running:
        yield running
        assert not running.server_errors(), running.log()


@pytest.fixture(scope="module")
def session() -> Iterator[requests.Session]:
    """One HTTP session for every call (a call without one leaves its socket to the GC)."""
    with requests.Session() as opened:
        opened.auth = ADMIN
        yield opened


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
def test_generated_operations_get_no_server_error(
    case: schemathesis.Case, server: LiveServer, session: requests.Session
) -> None:
    response = case.call(base_url=f"{server.url}/graphql", session=session)
    assert response.status_code < 500, response.text
    if response.status_code != 200:  # a body refused whole (a generated string holds U+0000)
        assert response.json()["code"] in CODES, response.text
        return
    codes = {e.get("extensions", {}).get("code") for e in response.json().get("errors") or ()}
    assert codes <= CODES, response.text  # no INTERNAL_SERVER_ERROR, no error without a code


def test_the_schema_is_served(server: LiveServer) -> None:
    assert httpx.get(f"{server.url}/livez").status_code == 200
