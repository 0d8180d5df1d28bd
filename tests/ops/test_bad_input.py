# ruff: noqa: E501 - tables of cases read best one case a line
"""Every class of bad input, through every interface, against the real server:
each gets a 4xx (HTTP backend, a refused /graphql body) or a coded GraphQL
error, never a 5xx or a traceback (the live-server fixture fails the module
otherwise). What the server accepts at the edge of a limit stores and renders
back.
"""

import base64
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.jsonutil import MAX_DEPTH
from app.tfstate.parse import MAX_SERIAL
from tests.helpers.backend import lock_info
from tests.helpers.live_server import LiveServer, server_fixture
from tests.helpers.states import BUILTIN, resource, state

pytestmark = pytest.mark.slow  # starts servers of its own

server = server_fixture(scope="module")

LONG_DIGITS = "12345678901234567890"  # takes the exact (stdlib) parser
HUGE_DIGITS = "9" * 5_000  # past Python's limit of exact integer conversion
# Longer than a btree index row (2,704 bytes), even compressed: 9,000 bytes of CJK
LONG_TEXT = "".join(chr(0x4E00 + i * 7 % 20_000) for i in range(3_000))
CODES = {"BAD_INPUT", "LIMIT_EXCEEDED", "NOT_FOUND"}


@pytest.fixture
async def client(server: LiveServer, conn: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        base_url=server.url, timeout=60, headers={"Content-Type": "application/json"}
    ) as c:
        yield c


def nest(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def raw_nest(depth: int, leaf: str = "1") -> str:
    return '{"a":' * depth + leaf + "}" * depth


def tf(**fields: Any) -> dict[str, Any]:
    """A state document: one resource whose instance gets `fields`."""
    doc = json.loads(state([resource("terraform_data", "x", provider=BUILTIN)]))
    doc["resources"][0]["instances"][0].update(fields)
    return doc


def text(doc: dict[str, Any], **top: Any) -> bytes:
    """UTF-8 JSON (lone surrogates escaped: they have no UTF-8 form)."""
    return json.dumps({**doc, **top}, ensure_ascii=False).encode("utf-8", "backslashreplace")


# (name, body): bodies that are no storable state, each a class of the issue
STATES: list[tuple[str, bytes]] = [
    ("serial past int64", text(tf(), serial=2**63)),
    ("serial past GraphQL Int", text(tf(), serial=MAX_SERIAL + 1)),
    ("schema_version past int64", text(tf(schema_version=2**63))),
    ("identity_schema_version past int64", text(tf(identity_schema_version=-(2**63) - 1))),
    ("deep attributes", text(tf(attributes=nest(MAX_DEPTH)))),
    ("deep, 300", text(tf(attributes=nest(300)))),
    ("deep, 1,100, with a 19-digit number", text(tf(), extra=json.loads(raw_nest(900, LONG_DIGITS)))
     if False else ('{"version":4,"serial":1,"lineage":"l","x":' + raw_nest(1_100, LONG_DIGITS) + "}").encode()),
    ("deep, 1,100", ('{"version":4,"serial":1,"lineage":"l","x":' + raw_nest(1_100) + "}").encode()),
    ("lone surrogate", text(tf(attributes={"a": "\ud800"})).replace(b"\\ud800", b"\\ud800")),
    ("lone surrogate, exact path", text(tf(attributes={"a": "\ud800", "n": int(LONG_DIGITS)}))),
    ("U+0000", text(tf(attributes={"a": "\x00"}))),
    ("NaN", text(tf(attributes={"a": float("nan")}))),
    ("Infinity", text(tf(attributes={"a": float("inf")}))),
    ("1e400", text(tf()).replace(b'"attributes": {}', b'"attributes": {"a": 1e400}')),
    ("1e400, exact path", text(tf(), serial=1).replace(
        b'"attributes": {}', f'"attributes": {{"a": 1e400, "b": {LONG_DIGITS}}}'.encode())),
    ("invalid UTF-8", text(tf(attributes={"a": "é"})).replace("é".encode(), b"\xc3\x28")),
    ("a 3,000-character type", json.dumps(json.loads(state([resource(LONG_TEXT, "x")]))).encode()),
    ("a 3,000-character name", json.dumps(json.loads(state([resource("aws_vpc", LONG_TEXT)]))).encode()),
    ("a 3,000-character output name", state([], outputs={LONG_TEXT: {"value": 1, "type": "number"}})),
    ("a 5,000-digit integer", text(tf()).replace(b'"attributes": {}', f'"attributes": {{"a": {HUGE_DIGITS}}}'.encode())),
]  # fmt: skip


@pytest.mark.parametrize(("name", "body"), STATES, ids=[name for name, _ in STATES])
async def test_states_are_refused_with_a_4xx(client, name: str, body: bytes) -> None:
    response = await client.post(f"/states/bad/{uuid.uuid4().hex}", content=body)
    assert 400 <= response.status_code < 500, response.text
    assert response.json()["code"] in CODES
    assert response.headers["content-type"] == "application/json"


LOCKS: list[tuple[str, bytes]] = [
    ("deep", json.dumps({**lock_info(), "Info": nest(MAX_DEPTH)}).encode()),
    ("deep, exact path", json.dumps({**lock_info(), "Info": nest(600, int(LONG_DIGITS))}).encode()),
    ("lone surrogate", json.dumps({**lock_info(), "Who": "\udc00"}).encode()),
    ("U+0000", json.dumps({**lock_info(), "Who": "\x00"}).encode()),
    ("NaN", json.dumps({**lock_info(), "Info": float("nan")}).encode()),
    ("invalid UTF-8", text(lock_info(who="é")).replace("é".encode(), b"\xff")),
    ("a 5,000-digit integer", json.dumps({**lock_info(), "Info": 1}).encode().replace(b'"Info": 1', f'"Info": {HUGE_DIGITS}'.encode())),
    ("a 5,000-digit integer, nested", json.dumps({**lock_info(), "Info": nest(20)}).encode().replace(b'"a": 1', f'"a": {HUGE_DIGITS}'.encode())),
    ("deep, 1,100", ('{"ID": "x", "Info": ' + raw_nest(1_100) + "}").encode()),
    ("escaped U+0000", b'{"ID": "x", "Who": "a\\u0000"}'),
    ("escaped lone surrogate", b'{"ID": "x", "Who": "\\ud800"}'),
]  # fmt: skip


@pytest.mark.parametrize(("name", "body"), LOCKS, ids=[name for name, _ in LOCKS])
@pytest.mark.parametrize("method", ["LOCK", "UNLOCK"])
async def test_lock_bodies_are_refused_with_a_4xx(
    client, method: str, name: str, body: bytes
) -> None:
    response = await client.request(method, "/states/bad/lock", content=body)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "BAD_INPUT"
    assert response.json()["error"].startswith("LockInfo"), response.text  # and says why


async def test_a_large_state_with_a_huge_integer_is_refused_with_the_reason(client) -> None:
    """Without a Content-Length the body streams (app/tfstate/stream.py)."""
    body = text(tf()).replace(b'"attributes": {}', f'"attributes": {{"a": {HUGE_DIGITS}}}'.encode())

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 1024):
            yield body[start : start + 1024]

    response = await client.post(f"/states/bad/{uuid.uuid4().hex}", content=chunks())
    assert response.status_code == 400, response.text
    assert "digits" in response.json()["error"]


async def test_what_is_accepted_at_the_limits_stores_and_renders_back(client) -> None:
    doc = tf(attributes=nest(MAX_DEPTH - 5), schema_version=2**63 - 1)
    doc["serial"] = MAX_SERIAL
    body = json.dumps(doc).encode()
    assert (await client.post("/states/edge", content=body)).status_code == 200
    assert (await client.get("/states/edge")).content == body
    query = """{ resources(filter: {state: "edge"}) { edges { node { attributes } } }
                 state(name: "edge") { currentVersion { serial } }
                 events(first: 5) { edges { node { action } } } }"""
    data = (await client.post("/graphql", json={"query": query})).json()
    assert "errors" not in data, data
    assert data["data"]["resources"]["edges"][0]["node"]["attributes"] == nest(MAX_DEPTH - 5)
    assert data["data"]["state"]["currentVersion"]["serial"] == MAX_SERIAL


async def graphql_codes(client: httpx.AsyncClient, **body: Any) -> list[str]:
    """The codes of the errors (a body refused whole: its code), [] when none."""
    response = await client.post("/graphql", json=body)
    if response.status_code != 200:
        assert 400 <= response.status_code < 500, response.text
        return [response.json()["code"]]
    return [error["extensions"]["code"] for error in response.json().get("errors", ())]


STATE_QUERY = "query($name: String!) { state(name: $name) { name } }"
GRAPHQL_LITERALS = [
    '{ state(name: "a\\u0000b") { name } }',
    '{ resources(filter: {type: "a\\u0000"}) { totalCount } }',
    '{ blastRadius(state: "\\u0000", address: "x") { totalCount } }',
    '{ events(state: "\\u0000") { totalCount } }',
    '{ state(name: "\\ud800") { name } }',
    '{ node(id: "\\u0000") { id } }',
    '{ node(id: "AAAA") { id } }',
    '{ scope(slug: "\\u0000") { name } }',
    '{ iacState(scope: "\\u0000") { ref } }',
    '{ resources(after: "W1wiYVx1MDAwMFwiXQ==") { totalCount } }',
    "{ states(first: 2147483647) { totalCount } }",
    '{ state(name: "' + "x" * 3000 + '") { name } }',
    '{ blastRadius(state: "x", address: "y", serial: 99999999999) { totalCount } }',
]


@pytest.mark.parametrize("query", GRAPHQL_LITERALS)
async def test_graphql_literals_get_a_code(client, query: str) -> None:
    assert set(await graphql_codes(client, query=query)) <= CODES


@pytest.mark.parametrize(
    "variables",
    [
        {"name": "a\x00b"},
        {"name": "x" * 3000},
        {"name": 2**70},
        {"name": nest(MAX_DEPTH - 2)},
        {"name": [1, 2**70]},
    ],
)
async def test_graphql_variables_get_a_code(client, variables: dict[str, Any]) -> None:
    assert set(await graphql_codes(client, query=STATE_QUERY, variables=variables)) <= CODES


def cursor(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode()


@pytest.mark.parametrize(
    "after",
    [
        cursor(nest(MAX_DEPTH + 10)),
        cursor(["\x00"]),
        cursor([2**64]),
        cursor(["a", 2**63]),
        "4pyTIMOgIGxhIG1vZGU=",  # valid base64 of text that is no JSON
        "//79",  # base64 of invalid UTF-8
        "\u00e9t\u00e9",
        base64.urlsafe_b64encode(f'["a", {HUGE_DIGITS}]'.encode()).decode(),
    ],
)
async def test_bad_cursors_get_bad_input(client, after: str) -> None:
    query = "query($after: String) { states(after: $after) { totalCount } resources(after: $after) { totalCount } }"
    assert set(await graphql_codes(client, query=query, variables={"after": after})) == {
        "BAD_INPUT"
    }


BODIES = [
    ("invalid UTF-8", b'{"query": "{ states { totalCount } }", "x": "\xff"}'),
    ("lone surrogate", b'{"query": "{ states { totalCount } }", "variables": {"a": "\\ud800"}}'),
    ("U+0000", b'{"query": "{ states { totalCount } }", "variables": {"a": "\\u0000"}}'),
    ("deep", ('{"query": "{ states { totalCount } }", "variables": {"a": ' + raw_nest(300) + "}}").encode()),
    ("deep, exact", ('{"query": "{ states { totalCount } }", "variables": {"a": ' + raw_nest(1_500, LONG_DIGITS) + "}}").encode()),
    ("NaN", b'{"query": "{ states { totalCount } }", "variables": {"a": NaN}}'),
    ("1e400", b'{"query": "{ states { totalCount } }", "variables": {"a": 1e400}}'),
    ("not JSON", b"{query"),
    ("a 5,000-digit variable", ('{"query": "{ states { totalCount } }", "variables": {"a": ' + HUGE_DIGITS + "}}").encode()),
    ("a 5,000-digit extension", ('{"query": "{ states { totalCount } }", "extensions": {"a": [' + HUGE_DIGITS + "]}}").encode()),
]  # fmt: skip


@pytest.mark.parametrize(("name", "body"), BODIES, ids=[name for name, _ in BODIES])
async def test_graphql_bodies_are_refused_with_a_400(client, name: str, body: bytes) -> None:
    headers = {"Content-Type": "application/json"}
    response = await client.post("/graphql", content=body, headers=headers)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "BAD_INPUT"


@pytest.mark.parametrize(
    ("name", "value"), [("variables", '{"name": "\\ud800"}'), ("variables", f'{{"name": {HUGE_DIGITS}}}'),
                        ("extensions", f'{{"a": {HUGE_DIGITS}}}')],
)  # fmt: skip
async def test_graphql_get_variables_are_read_the_same_way(client, name: str, value: str) -> None:
    params = {"query": STATE_QUERY, name: value}
    response = await client.get("/graphql", params=params)
    assert response.status_code == 400
    assert response.json()["code"] == "BAD_INPUT"


PLAN = """mutation($scope: String!, $document: String!) { plan(scope: $scope, document: $document) { hash } }"""
APPLY = """mutation($scope: String!, $document: String!, $hash: String!) {
  apply(scope: $scope, document: $document, hash: $hash) { stateName } }"""
HEADER = '{"kind": "header", "system": "crm", "version": 1}\n'


def iac_line(**line: Any) -> str:
    return json.dumps(line, ensure_ascii=False) + "\n"


IAC_DOCUMENTS = [
    ("deep settings", HEADER + iac_line(kind="table", ref="t", spec={"name": "T", "settings": nest(250)})),
    ("deep, exact", HEADER + '{"kind": "table", "ref": "t", "spec": {"name": "T", "settings": ' + raw_nest(300, LONG_DIGITS) + "}}\n"),
    ("U+0000", HEADER + iac_line(kind="table", ref="t", spec={"name": "T\x00"})),
    ("escaped U+0000", HEADER + '{"kind": "table", "ref": "t", "spec": {"name": "T\\u0000"}}\n'),
    ("lone surrogate", HEADER + '{"kind": "table", "ref": "t", "spec": {"name": "\\udc00"}}\n'),
    ("NaN", HEADER + '{"kind": "table", "ref": "t", "spec": {"name": "T", "settings": {"a": NaN}}}\n'),
    ("1e400", HEADER + '{"kind": "table", "ref": "t", "spec": {"name": "T", "settings": {"a": 1e400}}}\n'),
    ("a 5,000-digit integer", HEADER + '{"kind": "table", "ref": "t", "spec": {"name": "T", "settings": {"a": ' + HUGE_DIGITS + "}}}\n"),
]  # fmt: skip


async def scope(client: httpx.AsyncClient) -> str:
    slug = f"s{uuid.uuid4().hex[:10]}"
    mutation = "mutation($slug: String!) { createScope(slug: $slug, name: $slug) { slug } }"
    response = await client.post("/graphql", json={"query": mutation, "variables": {"slug": slug}})
    assert "errors" not in response.json(), response.text
    return slug


@pytest.mark.parametrize(("name", "document"), IAC_DOCUMENTS, ids=[n for n, _ in IAC_DOCUMENTS])
async def test_iac_documents_that_cannot_apply_are_refused_at_plan(
    client, name: str, document: str
) -> None:
    slug = await scope(client)
    variables = {"scope": slug, "document": document}
    assert await graphql_codes(client, query=PLAN, variables=variables) == ["BAD_INPUT"]
    variables["hash"] = "0" * 64
    assert await graphql_codes(client, query=APPLY, variables=variables) == ["BAD_INPUT"]


async def _plan_and_apply(client: httpx.AsyncClient, slug: str, document: str) -> list[str]:
    response = await client.post(
        "/graphql", json={"query": PLAN, "variables": {"scope": slug, "document": document}}
    )
    body = response.json()
    if "errors" in body:
        return [e["extensions"]["code"] for e in body["errors"]]
    variables = {"scope": slug, "document": document, "hash": body["data"]["plan"]["hash"]}
    return await graphql_codes(client, query=APPLY, variables=variables)


@pytest.mark.parametrize(
    "lines",
    [
        [iac_line(kind="table", ref="t", spec={"name": "T", "tags": [LONG_TEXT + str(i) for i in range(2)]})],
        [iac_line(kind="table", ref="t", spec={"name": "T"}),
         iac_line(kind="grant", table="t", principal="p" * 3000, spec={"permissions": ["read"]})],
        [iac_line(kind="table", ref="t", spec={"name": LONG_TEXT})],
    ],
)  # fmt: skip
async def test_iac_strings_too_long_for_an_index_get_a_code(client, lines: list[str]) -> None:
    assert set(await _plan_and_apply(client, await scope(client), HEADER + "".join(lines))) <= CODES


async def test_catalog_strings_too_long_for_an_index_get_a_code(client) -> None:
    slug = await scope(client)
    create = (
        """mutation($scope: String!) { createTable(scope: $scope, input: {name: "T"}) { id } }"""
    )
    response = await client.post("/graphql", json={"query": create, "variables": {"scope": slug}})
    table = response.json()["data"]["createTable"]["id"]
    for mutation, variables in [
        ("mutation($id: ID!, $t: String!) { addTableTag(id: $id, tag: $t) { id } }", {"t": LONG_TEXT}),
        ("mutation($id: ID!, $t: String!) { createGrant(table: $id, input: {principal: $t, permissions: [READ]}) { id } }", {"t": LONG_TEXT}),
        ("mutation($id: ID!, $t: String!) { createColumn(table: $id, input: {name: $t, type: TEXT}) { id } }", {"t": LONG_TEXT}),
    ]:  # fmt: skip
        codes = await graphql_codes(client, query=mutation, variables={"id": table, **variables})
        assert codes == ["LIMIT_EXCEEDED"] or set(codes) <= CODES, codes
