"""A state or catalog object a token may not read answers exactly as a missing one, to
that token: a `terraform_remote_state` of a hidden state reads back as one of a missing
state, and catalog errors never name the scope of an object outside the token's. On the
real server, with a scoped writer."""

import json
import uuid
from typing import Any

import httpx

from tests.helpers.links import remote
from tests.helpers.live_server import LiveServer, server_fixture
from tests.helpers.states import resource, state

BOOT = "boot-secret"
server = server_fixture({"INFRAGRAPH_API_TOKENS": f"boot:{BOOT}"}, scope="module")
JSON_BODY = {"Content-Type": "application/json"}
READ = {"vpc_id": "vpc-0a1b2c3d4e5f", "password": "planted-pw-0001"}
DATA = """query($state: String!) {
  resources(first: 5, filter: {state: $state, mode: DATA}) { edges { node {
    address attributes sensitiveAttributes
    history(first: 5) { edges { node { attributes { path sensitive old new } } } }
  } } }
  state(name: $state) { producers { producer { name } } unreadOutputs
    currentVersion { resources(first: 5) { totalCount } } }
}"""
SEARCH = """query($filter: ResourceFilter!) {
  resources(first: 5, filter: $filter) { totalCount } }"""


def _client(url: str, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {token}", **JSON_BODY}, timeout=30
    )


def _gql(client: httpx.Client, query: str, **variables: object) -> dict[str, Any]:
    body: dict[str, Any] = client.post(
        "/graphql", json={"query": query, "variables": variables}
    ).json()
    assert not body.get("errors"), body
    return body["data"]


def _errors(client: httpx.Client, query: str, **variables: object) -> list[dict[str, Any]]:
    body = client.post("/graphql", json={"query": query, "variables": variables}).json()
    assert body.get("errors"), body
    errors: list[dict[str, Any]] = body["errors"]
    return errors


def _writer(url: str, **reach: list[str]) -> str:
    create = """mutation($states: [String!], $scopes: [String!]) {
      createToken(name: "writer", role: WRITE, states: $states, scopes: $scopes) { secret } }"""
    with _client(url, BOOT) as boot:
        secret: str = _gql(boot, create, **reach)["createToken"]["secret"]
    return secret


def _write(client: httpx.Client, name: str, body: bytes, serial: int = 1) -> None:
    response = client.post(f"/states/{name}", content=body)
    assert response.status_code == 200, response.text


def _consumer(url: str, producer: str, serial: int) -> bytes:
    address = f"{url}/states/{producer.replace('/', '%2F')}"
    return state(
        [
            remote("net", address, {**READ, "password": f"planted-pw-000{serial}"}),
            resource("aws_instance", "app", depends_on=["data.terraform_remote_state.net"]),
        ],
        serial=serial,
    )


def _read_back(client: httpx.Client, url: str, name: str, producer: str) -> str:
    """What the writer reads of its state, the producer's address made the same."""
    seen = {
        "data": _gql(client, DATA, state=name),
        "search": [
            _gql(client, SEARCH, filter={"state": name, "attributes": attributes})
            for attributes in (
                {"outputs": {"value": {"password": "planted-pw-0002"}}},
                {"outputs": {"value": {"vpc_id": READ["vpc_id"]}}},
            )
        ],
    }
    return json.dumps(seen).replace(producer.replace("/", "%2F"), "PRODUCER").replace(name, "S")


def test_a_remote_state_of_a_hidden_state_reads_as_one_of_a_missing_state(
    server: LiveServer, conn
) -> None:
    producer = state(
        [resource("aws_vpc", "main", attributes={"id": READ["vpc_id"]})],
        outputs={
            "vpc_id": {"value": READ["vpc_id"], "type": "string"},
            "password": {"value": "planted-pw-0001", "type": "string", "sensitive": True},
        },
    )
    with _client(server.url, BOOT) as boot:
        _write(boot, "secret/net", producer)
    with _client(server.url, _writer(server.url, states=["team/*"])) as writer:
        for serial in (1, 2):  # a second version: history and diffs too
            _write(writer, "team/hidden", _consumer(server.url, "secret/net", serial))
            _write(writer, "team/missing", _consumer(server.url, "nothing/net", serial))
        hidden = _read_back(writer, server.url, "team/hidden", "secret/net")
        missing = _read_back(writer, server.url, "team/missing", "nothing/net")
    assert hidden == missing
    assert "planted-pw-0002" in missing  # its own values, as it wrote them


FOREIGN = [  # (mutation, the argument naming a foreign object, its kind)
    ('mutation($id: ID!) { updateTable(id: $id, input: {name: "x"}) { id } }', "table"),
    ("mutation($id: ID!) { deleteTable(id: $id) }", "table"),
    ('mutation($id: ID!) { addTableTag(id: $id, tag: "t") { id } }', "table"),
    (
        'mutation($id: ID!) { createColumn(table: $id, input: {name: "c", type: TEXT}) { id } }',
        "table",
    ),
    ("mutation($id: ID!) { insertRecord(table: $id, values: {}) { id } }", "table"),
    ("mutation($id: ID!) { updateRecord(id: $id, values: {}) { id } }", "record"),
    ("mutation($id: ID!) { deleteRecord(id: $id) }", "record"),
]


def test_catalog_errors_answer_a_foreign_object_as_a_missing_one(server: LiveServer, conn) -> None:
    with _client(server.url, BOOT) as boot:
        _gql(boot, 'mutation { createScope(slug: "theirs", name: "Theirs") { id } }')
        _gql(boot, 'mutation { createScope(slug: "mine", name: "Mine") { id } }')
        made = 'mutation { createTable(scope: "theirs", input: {name: "Payroll"}) { id } }'
        table = _gql(boot, made)["createTable"]["id"]
        insert = "mutation($t: ID!) { insertRecord(table: $t, values: {}) { id } }"
        record = _gql(boot, insert, t=table)["insertRecord"]["id"]
    ids = {"table": table, "record": record}
    with _client(server.url, _writer(server.url, scopes=["mine"])) as writer:
        for mutation, kind in FOREIGN:
            absent = str(uuid.uuid4())
            foreign = _errors(writer, mutation, id=ids[kind])
            missing = _errors(writer, mutation, id=absent)
            assert "theirs" not in json.dumps(foreign), (mutation, foreign)
            assert json.dumps(foreign).replace(ids[kind], "ID") == json.dumps(missing).replace(
                absent, "ID"
            ), mutation


def test_a_hidden_producer_makes_no_event_a_reader_sees(server: LiveServer, conn) -> None:
    def producer(vpc_id: str, serial: int) -> bytes:
        outputs = {"vpc_id": {"value": vpc_id, "type": "string"}}
        return state([], outputs=outputs, serial=serial)

    with _client(server.url, BOOT) as boot:  # an admin links what it may read: everything
        _write(boot, "secret/net", producer(READ["vpc_id"], 1))
        for name, read in (("team/hidden", "secret/net"), ("team/missing", "nothing/net")):
            _write(boot, name, _consumer(server.url, read, 1))
        _write(boot, "secret/net", producer("vpc-0ffff", 2))  # team/hidden is stale now
        stale = '{ staleConsumers(state: "secret/net") { consumer { name } } }'
        assert _gql(boot, stale)["staleConsumers"] == [{"consumer": {"name": "team/hidden"}}]
    trail = """query($s: String) { events(state: $s, first: 20) { totalCount
      edges { node { id stateName action detail } } } }"""
    node = "query($id: ID!) { node(id: $id) { id } }"
    with _client(server.url, BOOT) as boot:
        [stale_event] = [
            e["node"]["id"]
            for e in _gql(boot, trail, s="team/hidden")["events"]["edges"]
            if e["node"]["action"] == "consumer-stale"
        ]
    with _client(server.url, _writer(server.url, states=["team/*"])) as reader:
        seen = {
            name: [e["node"]["action"] for e in _gql(reader, trail, s=name)["events"]["edges"]]
            for name in ("team/hidden", "team/missing")
        }
        assert seen["team/hidden"] == seen["team/missing"] == ["write"]
        everything = json.dumps(_gql(reader, trail, s=None))
        assert "secret/net" not in everything and "consumer-stale" not in everything
        assert _gql(reader, node, id=stale_event) == {"node": None}
