"""The server fails closed: open only on its first run, never again once a token has
existed (bootstrap or database), whatever then happens to the tokens; the last admin
kept; fractional expiry as given; token made, revoked and expired as audit events.
All through the real server."""

from datetime import datetime, timedelta

import httpx
import pytest

from tests.helpers.backend import assert_error, tf_state
from tests.helpers.live_server import LiveServer, live_server, server_fixture
from tests.helpers.waiting import wait_until_sync

pytestmark = pytest.mark.slow  # starts servers of its own

OPEN = {"INFRAGRAPH_API_TOKENS": None}
BOOT = "boot-secret"
BOOTSTRAP = {"INFRAGRAPH_API_TOKENS": f"boot:{BOOT}"}
CREATE = """mutation($name: String!, $role: Role!, $days: Float, $states: [String!]) {
  createToken(name: $name, role: $role, expiresDays: $days, states: $states) {
    token { name createdAt expiresAt } secret } }"""
REVOKE = "mutation($name: String!) { revokeToken(name: $name) { name revokedAt } }"
EVENTS = "{ events(first: 50) { edges { node { stateName action actor detail } } } }"
MALLORY = 'mutation { createToken(name: "mallory", role: ADMIN) { secret } }'
WAIT_S = 30.0
JSON_BODY = {"Content-Type": "application/json"}

server_with_boot = server_fixture(BOOTSTRAP, scope="module")


def _client(url: str, token: str | None = None) -> httpx.Client:
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=url, headers={**auth, **JSON_BODY}, timeout=30)


def _post(client: httpx.Client, query: str, **variables: object) -> httpx.Response:
    return client.post("/graphql", json={"query": query, "variables": variables})


def _gql(client: httpx.Client, query: str, **variables: object) -> dict:
    body = _post(client, query, **variables).json()
    assert not body.get("errors"), body
    return body["data"]


def _shut_out(server: LiveServer, *secrets: str) -> None:
    """No credentials, and each of `secrets`: 401 on every interface, and no admin is made."""
    for secret in (None, *secrets):
        with _client(server.url, secret) as client:
            assert_error(client.get("/states/a"), 401, "UNAUTHENTICATED")
            assert_error(client.post("/states/a", content=tf_state()), 401, "UNAUTHENTICATED")
            assert_error(_post(client, MALLORY), 401, "UNAUTHENTICATED")


def test_the_server_stays_closed_when_its_last_admin_expires(conn, database_url) -> None:
    with live_server(database_url, OPEN) as server:
        assert "first run" in server.log() and "the server is open" in server.log()
        with _client(server.url) as anyone:
            assert anyone.post("/states/a", content=tf_state()).status_code == 200
            made = _gql(anyone, CREATE, name="root", role="ADMIN", days=3 / 86400)
        root = made["createToken"]["secret"]
        with _client(server.url, root) as admin:
            assert admin.get("/states/a").status_code == 200
            wait_until_sync(
                lambda: admin.get("/states/a").status_code == 401,
                "the token expires",
                within=WAIT_S,
                interval=0.05,
            )
        _shut_out(server, root)
    with live_server(database_url, OPEN) as again:  # a restart does not reopen it either
        assert "first run" not in again.log() and "nobody can make a token" in again.log()
        _shut_out(again, root)
    with live_server(database_url, BOOTSTRAP) as recovered, _client(recovered.url, BOOT) as boot:
        assert boot.get("/states/a").status_code == 200  # the documented way back in
        _shut_out(recovered, root)


def test_revoked_tokens_stay_refused_when_no_token_is_live(conn, database_url) -> None:
    with live_server(database_url, BOOTSTRAP) as server, _client(server.url, BOOT) as boot:
        ci = _gql(boot, CREATE, name="ci", role="WRITE")["createToken"]["secret"]
        ops = _gql(boot, CREATE, name="ops", role="ADMIN")["createToken"]["secret"]
        for name in ("ci", "ops"):  # the bootstrap admin stays: the last admin may go
            _gql(boot, REVOKE, name=name)
    with live_server(database_url, OPEN) as bare:  # the bootstrap gone too
        _shut_out(bare, ci, ops)


def test_the_last_live_admin_token_is_kept(conn, database_url) -> None:
    with live_server(database_url, OPEN) as server:
        with _client(server.url) as anyone:
            root = _gql(anyone, CREATE, name="root", role="ADMIN")["createToken"]["secret"]
        with _client(server.url, root) as admin:
            _gql(admin, CREATE, name="second", role="ADMIN")
            _gql(admin, CREATE, name="reader", role="READ")
            _gql(admin, REVOKE, name="second")
            refused = _post(admin, REVOKE, name="root").json()["errors"][0]
            assert refused["extensions"]["code"] == "CONFLICT"
            assert "last live admin token" in refused["message"]
            assert "INFRAGRAPH_API_TOKENS" in refused["message"]
            assert admin.get("/states/a").status_code in (200, 404)  # still in


def test_fractional_expiry_is_kept_to_the_second(server_with_boot: LiveServer, conn) -> None:
    with _client(server_with_boot.url, BOOT) as boot:
        for name, days, hours in (("half", 0.5, 12), ("more", 1.7, 40.8)):
            token = _gql(boot, CREATE, name=name, role="READ", days=days)["createToken"]["token"]
            lasts = datetime.fromisoformat(token["expiresAt"]) - datetime.fromisoformat(
                token["createdAt"]
            )
            assert abs(lasts - timedelta(hours=hours)) < timedelta(seconds=1), (name, lasts)


def test_making_revoking_and_expiry_of_tokens_are_audit_events(
    server_with_boot: LiveServer, conn
) -> None:
    with _client(server_with_boot.url, BOOT) as boot:
        _gql(boot, CREATE, name="ops", role="ADMIN")
        ops_secret = _gql(boot, CREATE, name="ops2", role="ADMIN")["createToken"]["secret"]
    with _client(server_with_boot.url, ops_secret) as ops:
        reader = _gql(ops, CREATE, name="reader", role="READ", states=["*"])["createToken"]
        _gql(ops, CREATE, name="brief", role="READ", days=1 / 86400)
        _gql(ops, REVOKE, name="ops")

        def trail() -> list[tuple[str, str, str]]:
            found = [e["node"] for e in _gql(ops, EVENTS)["events"]["edges"]]
            return sorted((e["action"], e["detail"]["name"], e["actor"]) for e in found)

        wait_until_sync(
            lambda: ("token-expire", "brief", "ops2") in trail(),
            "the expiry is recorded",
            within=WAIT_S,
            interval=0.05,
        )
        assert trail() == [
            ("token-create", "brief", "ops2"),
            ("token-create", "ops", "boot"),
            ("token-create", "ops2", "boot"),
            ("token-create", "reader", "ops2"),
            ("token-expire", "brief", "ops2"),
            ("token-revoke", "ops", "ops2"),
        ]
        [made] = [
            e["node"]
            for e in _gql(ops, EVENTS)["events"]["edges"]
            if e["node"]["detail"]["name"] == "reader"
        ]
        assert made["stateName"] == "" and made["detail"]["states"] == ["*"]
        assert reader["secret"] not in str(_gql(ops, EVENTS))
    with _client(server_with_boot.url, reader["secret"]) as read:  # admins only
        assert _gql(read, EVENTS)["events"]["edges"] == []
        assert _gql(read, '{ events(state: "", first: 5) { edges { node { id } } } }') == {
            "events": {"edges": []}
        }
