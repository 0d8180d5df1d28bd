"""Token events reach a webhook for every state: a token made, one revoked. The first
token closes an open server, so this module has a server (and database) of its own."""

from tests.helpers.webhook_receiver import receiving
from tests.helpers.webhooks import (
    FAST,
    TOKEN_KINDS,
    create_webhook,
    data,
    graphql,
    server_on_own_database,
    signed,
)

server = server_on_own_database(FAST)

CREATE_TOKEN = """mutation($name: String!, $role: Role!) {
  createToken(name: $name, role: $role) { secret } }"""
REVOKE_TOKEN = """mutation($name: String!) { revokeToken(name: $name) { name } }"""


def test_token_made_and_revoked_arrive_signed(server) -> None:  # type: ignore[no-untyped-def]
    with receiving() as receiver:
        create_webhook(server.url, receiver.url, TOKEN_KINDS)
        admin = data(server.url, CREATE_TOKEN, {"name": "ops", "role": "ADMIN"})["createToken"]
        auth = {"Authorization": f"Bearer {admin['secret']}"}
        made = graphql(server.url, CREATE_TOKEN, {"name": "ci", "role": "READ"}, **auth)
        assert "errors" not in made, made
        revoked = graphql(server.url, REVOKE_TOKEN, {"name": "ci"}, **auth)
        assert "errors" not in revoked, revoked
        got = receiver.wait_for(lambda got: len(got) >= 3)
    assert all(signed(r) for r in got)
    seen = [
        (r.json["kind"], r.json["actor"], r.json["data"]["name"], r.json["data"]["role"])
        for r in got
    ]
    assert seen == [
        ("token.created", "anonymous", "ops", "admin"),
        ("token.created", "ops", "ci", "read"),
        ("token.revoked", "ops", "ci", "read"),
    ]
    assert {(r.json["state"], r.json["url"]) for r in got} == {("", "/")}
    assert all("secret" not in r.json["data"] for r in got)
