"""Bad GraphQL input gets a GraphQL error with a code (HTTP 200), never a 500."""

import logging

import httpx
import pytest

from app.api.runtime.limits import MAX_ALIASES, MAX_DEPTH, MAX_TOKENS
from app.config import Settings
from app.graph.write.version import write_version
from app.server import create_app
from tests.helpers.graphql import error_codes, gql, post
from tests.helpers.states import chain_graph


def _aliases(count: int, field: str) -> str:
    return "{" + " ".join(f"a{i}: {field}" for i in range(count)) + "}"


def _blast(max_depth: int) -> str:
    args = f'state: "g", address: "terraform_data.r", maxDepth: {max_depth}'
    return f"{{ blastRadius({args}) {{ totalCount }} }}"


def _deep(levels: int) -> str:
    """resources -> dependencies -> dependencies ...: 3 levels each (connection, edges, node),
    one item a page (under the cost limit)."""
    inner = "address"
    for _ in range(levels // 3):
        inner = f"dependencies(first: 1) {{ edges {{ node {{ {inner} }} }} }}"
    return f"{{ resources(first: 1) {{ edges {{ node {{ {inner} }} }} }} }}"


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("{ nope }", "BAD_INPUT"),  # unknown field
        ("{ states { edges { node { nope } } } }", "BAD_INPUT"),
        ('{ states(first: "ten") { totalCount } }', "BAD_INPUT"),  # wrong type
        ("{ states(first: 99999999999) { totalCount } }", "BAD_INPUT"),  # not an Int
        ("{ states { ", "BAD_INPUT"),  # syntax
        (_deep(30), "LIMIT_EXCEEDED"),
        (_aliases(2000, "states { totalCount }"), "LIMIT_EXCEEDED"),  # over the token limit
        (_aliases(MAX_ALIASES + 1, "__typename"), "LIMIT_EXCEEDED"),
        ("{ states(first: 1000000) { totalCount } }", "LIMIT_EXCEEDED"),
        ("{ states(first: -1) { totalCount } }", "BAD_INPUT"),
        ('{ states(after: "garbage") { totalCount } }', "BAD_INPUT"),
        ('{ states(after: "WzEsMl0=") { totalCount } }', "BAD_INPUT"),  # [1,2]: wrong shape
        ('{ resources(filter: {attributes: "public"}) { totalCount } }', "BAD_INPUT"),
        ("{ resources(filter: {attributes: [1]}) { totalCount } }", "BAD_INPUT"),
        ('{ resources(filter: {mode: "managed"}) { totalCount } }', "BAD_INPUT"),
        (_blast(0), "BAD_INPUT"),
        ('{ blastRadius(state: "nope", address: "x") { totalCount } }', "NOT_FOUND"),
        ("mutation { x }", "BAD_INPUT"),  # unknown mutation
    ],
)  # fmt: skip
async def test_bad_input_gets_a_coded_error(client, conn, caplog, query: str, code: str) -> None:
    await write_version(conn, "g", chain_graph(), actor="test")
    with caplog.at_level(logging.ERROR, logger="infragraph.api"):
        assert await error_codes(client, query) == [code]
    assert not caplog.records  # expected errors are not logged as bugs


async def test_limits_are_where_the_messages_say(client, conn) -> None:
    assert "errors" not in await post(client, _deep(MAX_DEPTH - 5))  # depth 18
    tokens = "{" + " ".join(f"a{i}: __typename" for i in range(MAX_TOKENS // 3 + 1)) + "}"
    body = await post(client, tokens)
    assert "more than" in body["errors"][0]["message"]


async def test_variables_of_the_wrong_type(client, conn) -> None:
    query = """query($first: Int, $f: ResourceFilter) {
        resources(first: $first, filter: $f) { totalCount } }"""
    assert await error_codes(client, query, {"first": "x"}) == ["BAD_INPUT"]
    assert await error_codes(client, query, {"f": {"attributes": "x"}}) == ["BAD_INPUT"]
    assert await error_codes(client, query, {"f": {"nope": 1}}) == ["BAD_INPUT"]
    assert await gql(client, query, {"first": 0, "f": {"attributes": {"a": 1}}}) == {
        "resources": {"totalCount": 0}
    }


async def test_a_bug_is_logged_and_its_message_withheld(client, conn, caplog, monkeypatch) -> None:
    async def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr("app.graph.queries.state_by_name", broken)
    with caplog.at_level(logging.ERROR, logger="infragraph.api"):
        body = await post(client, '{ state(name: "x") { name } }')
    [error] = body["errors"]
    assert error["extensions"]["code"] == "INTERNAL_SERVER_ERROR"
    assert "secret" not in error["message"]
    assert "secret internals" in caplog.text


async def test_private_schema_has_no_introspection_and_no_graphiql(database_url, conn) -> None:
    app = create_app(Settings(public_schema=False), database_url=database_url)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://t",
            headers={"Content-Type": "application/json"},
        ) as client,
    ):
        assert set(await error_codes(client, "{ __schema { types { name } } }")) == {"BAD_INPUT"}
        assert await gql(client, "{ states { totalCount } }") == {"states": {"totalCount": 0}}
        page = await client.get("/graphql", headers={"Accept": "text/html"})
        assert page.status_code == 404
        assert (await client.get("/graphiql/start.js")).status_code == 404
        # no hint names what the schema holds (a public schema says "Did you mean 'state'?")
        for typo in ("{ stat { name } }", "{ states(frist: 1) { totalCount } }"):
            [error] = (await post(client, typo))["errors"]
            assert error["extensions"]["code"] == "BAD_INPUT"
            assert "Did you mean" not in error["message"], error["message"]
            assert "'state'" not in error["message"] and "'first'" not in error["message"]


async def test_a_public_schema_suggests(client) -> None:
    [error] = (await post(client, "{ stat { name } }"))["errors"]
    assert "Did you mean 'state' or 'states'?" in error["message"]
