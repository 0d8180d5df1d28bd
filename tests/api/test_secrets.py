"""Secrets never match: attribute search and every filter see null at a sensitive path,
whether Terraform marks it (top level, nested, list element, deposed object) or it is
secret by convention (credentials of a terraform_remote_state config), through
`resources`, a version's resources, `inventory` and a blast radius's resources; and the
export still gives every value back."""

import json
from typing import Any

import pytest

from app.graph.write.version import write_version
from tests.helpers.graphql import gql
from tests.helpers.states import BUILTIN, resource

NESTED = [[{"type": "get_attr", "value": "auth"}, {"type": "get_attr", "value": "key"}]]
LISTED = [
    [
        {"type": "get_attr", "value": "keys"},
        {"type": "index", "value": {"value": 1, "type": "number"}},
    ]
]
PASSWORD = [[{"type": "get_attr", "value": "master_password"}]]


def _secret_state() -> bytes:
    db = resource(
        "aws_db_instance",
        "db",
        attributes={"master_password": "hunter2", "engine": "postgres"},
        sensitive=PASSWORD,
    )
    api = resource(
        "aws_api",
        "api",
        attributes={"auth": {"key": "nested-secret", "user": "bob"}, "keys": ["open", "listed"]},
        sensitive=NESTED + LISTED,
        depends_on=["aws_db_instance.db"],
    )
    # create_before_destroy left a deposed object beside the current one
    deposed = {
        "schema_version": 0,
        "deposed": "00000001",
        "attributes": {"master_password": "deposed-secret", "engine": "postgres"},
        "sensitive_attributes": PASSWORD,
    }
    old = resource(
        "aws_db_instance", "old", attributes={"master_password": "x"}, sensitive=PASSWORD
    )
    old["instances"].append(deposed)
    remote = resource(
        "terraform_remote_state",
        "net",
        mode="data",
        provider=BUILTIN,
        attributes={
            "backend": "http",
            "config": {
                "value": {
                    "address": "http://127.0.0.1/states/net",
                    "username": "reader",
                    "password": "remote-password",
                    "nested": {"client_secret": "remote-client-secret"},
                },
                "type": ["object", {"address": "string", "username": "string"}],
            },
            "defaults": None,
            "outputs": {"value": {"vpc": "vpc-1"}, "type": ["object", {"vpc": "string"}]},
            "workspace": None,
        },
    )
    return json.dumps(
        {
            "version": 4,
            "terraform_version": "1.15.5",
            "serial": 1,
            "lineage": "l",
            "outputs": {},
            "resources": [db, api, old, remote],
        }
    ).encode()


# (attributes filter: one that holds a secret, the same with a wrong guess)
GUESSES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({"master_password": "hunter2"}, {"master_password": "wrong"}),  # top level
    ({"auth": {"key": "nested-secret"}}, {"auth": {"key": "wrong"}}),  # nested
    ({"keys": ["listed"]}, {"keys": ["wrong"]}),  # list element
    ({"master_password": "deposed-secret"}, {"master_password": "wrong"}),  # deposed
    (
        {"config": {"value": {"password": "remote-password"}}},
        {"config": {"value": {"password": "wrong"}}},
    ),
    (
        {"config": {"value": {"nested": {"client_secret": "remote-client-secret"}}}},
        {"config": {"value": {"nested": {"client_secret": "wrong"}}}},
    ),
]

SEARCH = """query($attributes: JSON!) {
  resources(filter: {attributes: $attributes}) { totalCount }
  state(name: "s") { currentVersion { resources(filter: {attributes: $attributes}) {
    totalCount } } }
  inventory(groupBy: TYPE, filter: {attributes: $attributes}) { key count }
}"""


@pytest.mark.parametrize(("secret", "wrong"), GUESSES)
async def test_no_filter_matches_a_secret(client, conn, secret, wrong) -> None:
    await write_version(conn, "s", _secret_state(), actor="t")
    for guess in (secret, wrong):
        data = await gql(client, SEARCH, {"attributes": guess})
        assert data["resources"]["totalCount"] == 0
        assert data["state"]["currentVersion"]["resources"]["totalCount"] == 0
        assert data["inventory"] == []


async def test_what_is_not_secret_still_matches(client, conn) -> None:
    await write_version(conn, "s", _secret_state(), actor="t")
    for attributes, count in [
        ({"engine": "postgres"}, 2),  # aws_db_instance.db and the deposed object
        ({"auth": {"user": "bob"}}, 1),
        ({"keys": ["open"]}, 1),
        ({"config": {"value": {"username": "reader"}}}, 1),
    ]:
        data = await gql(client, SEARCH, {"attributes": attributes})
        assert data["resources"]["totalCount"] == count, attributes


async def test_secrets_are_null_to_readers_and_in_a_blast_radius(client, conn) -> None:
    await write_version(conn, "s", _secret_state(), actor="t")
    data = await gql(
        client,
        """{
          blastRadius(state: "s", address: "aws_db_instance.db", first: 5) {
            edges { node { resource { address attributes } } } }
          remote: resources(filter: {type: "terraform_remote_state"}) {
            edges { node { config: attributes(path: ["config", "value"]) } } }
        }""",
    )
    [api] = [e["node"]["resource"] for e in data["blastRadius"]["edges"]]
    assert api == {
        "address": "aws_api.api",
        "attributes": {"auth": {"key": None, "user": "bob"}, "keys": ["open", None]},
    }
    [remote] = [e["node"]["config"] for e in data["remote"]["edges"]]
    assert remote == {
        "address": "http://127.0.0.1/states/net",
        "username": "reader",
        "password": None,
        "nested": {"client_secret": None},
    }


async def test_export_gives_every_secret_back(client, conn) -> None:
    body = _secret_state()
    await write_version(conn, "s", body, actor="t")
    exported = await gql(client, 'mutation { exportState(name: "s") }')
    assert exported["exportState"] == json.loads(body)
