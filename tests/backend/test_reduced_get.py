"""A GET reduced to the outputs, through the real server: for read tokens (the public
outputs) and for the readers a state names (sensitive outputs too), marked by a header
and recorded in the audit trail; named by writers through setOutputReaders."""

import json
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest

from app.tokens import token_hash
from tests.helpers.backend import events, http_client
from tests.helpers.live_server import LiveServer
from tests.helpers.states import BUILTIN, resource, state
from tests.helpers.tofu_encryption import tofu

NET = "net/core"
SECRET_ATTRIBUTE = "PLANTED-attribute-secret"
SECRET_OUTPUT = "PLANTED-output-secret"
DB_TOKENS = {  # name: (role, states, secret); secrets no other module uses, as the
    # session server caches found tokens by secret for a few seconds
    "net-ci": ("write", ["net/*"], "reduced-net-secret"),
    "dash": ("read", ["net/*"], "reduced-dash-secret"),
    "auditor": ("read", ["audit/*"], "reduced-audit-secret"),
    "plat-pr": ("plan", ["plat/*"], "reduced-plat-secret"),
    "plat-dash": ("read", ["plat/*"], "reduced-plat-dash-secret"),
    "apps-ci": ("write", ["apps/*"], "reduced-apps-secret"),
}
SET_READERS = """mutation($state: String!, $tokens: [String!], $states: [String!]) {
  setOutputReaders(state: $state, tokens: $tokens, states: $states) { tokens states } }"""
VIEWER = """query($name: String!) { viewer { name role on(name: $name) { can } } }"""


def _net(serial: int = 1) -> bytes:
    return state(
        [
            resource(
                "terraform_data",
                "db",
                attributes={"input": {"value": SECRET_ATTRIBUTE, "type": "string"}},
                provider=BUILTIN,
            )
        ],
        serial=serial,
        lineage="net-lineage",
        outputs={
            "vpc_id": {"value": "vpc-1", "type": "string"},
            "db_password": {"value": SECRET_OUTPUT, "type": "string", "sensitive": True},
        },
    )


@pytest.fixture
async def callers(
    server: LiveServer, conn: asyncpg.Connection
) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    for name, (role, globs, secret) in DB_TOKENS.items():
        await conn.execute(
            """INSERT INTO api_tokens (name, token_hash, role, state_globs, created_by)
               VALUES ($1, $2, $3, $4, 'tests')""",
            name,
            token_hash(secret),
            role,
            globs,
        )
    made = {name: http_client(server, (name, secret)) for name, (_, _, secret) in DB_TOKENS.items()}
    try:
        assert (await made["net-ci"].post(f"/states/{NET}", content=_net())).is_success
        yield made
    finally:
        for client in made.values():
            await client.aclose()
        await conn.execute("DELETE FROM api_tokens")


async def _gql(client: httpx.AsyncClient, query: str, **variables: Any) -> dict[str, Any]:
    response = await client.post("/graphql", json={"query": query, "variables": variables})
    body: dict[str, Any] = response.json()
    return body


async def test_a_read_token_gets_the_public_outputs_of_its_states(callers, conn) -> None:
    got = await callers["dash"].get(f"/states/{NET}")
    assert got.status_code == 200 and got.headers["X-Infragraph-Reduced"] == "outputs"
    document = json.loads(got.content)
    whole = json.loads(_net())
    assert {k: document[k] for k in ("version", "serial", "lineage", "terraform_version")} == {
        k: whole[k] for k in ("version", "serial", "lineage", "terraform_version")
    }
    assert document["resources"] == [] and document["outputs"] == {
        "vpc_id": {"value": "vpc-1", "type": "string"}
    }
    assert SECRET_ATTRIBUTE not in got.text and SECRET_OUTPUT not in got.text
    assert "X-Infragraph-Reduced" not in (await callers["net-ci"].get(f"/states/{NET}")).headers
    read = (await events(conn, NET))[-1]
    assert (read["action"], read["actor"], read["serial"]) == ("read-outputs", "dash", 1)
    assert read["detail"] == {"reduced": "outputs", "sensitive": False, "outputs": 1}
    assert (await callers["dash"].get("/states/net/absent")).status_code == 404
    refused = await callers["dash"].get("/states/other/absent")  # absent or not: 403
    assert refused.status_code == 403 and refused.json()["code"] == "FORBIDDEN"


async def test_named_readers_get_every_output_and_no_resource(callers, conn) -> None:
    for name in ("auditor", "plat-pr", "plat-dash", "apps-ci"):
        refused = await callers[name].get(f"/states/{NET}")
        assert refused.status_code == 403, name
        said = refused.json()["error"]  # who, what and why, as every 403 says
        assert said.startswith(f"token {name!r}") and f"state {NET!r} is outside" in said
    # its readers cannot name more readers; a writer of the state can
    denied = await _gql(callers["dash"], SET_READERS, state=NET, tokens=["dash"])
    assert denied["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    named = await _gql(
        callers["net-ci"], SET_READERS, state=NET, tokens=["auditor"], states=["plat/*"]
    )
    assert named["data"]["setOutputReaders"] == {"tokens": ["auditor"], "states": ["plat/*"]}
    for name in ("auditor", "plat-pr"):  # by name; as a planner of a consumer state
        got = await callers[name].get(f"/states/{NET}")
        assert got.status_code == 200 and got.headers["X-Infragraph-Reduced"] == "outputs"
        assert set(got.json()["outputs"]) == {"vpc_id", "db_password"}
        assert got.json()["resources"] == [] and SECRET_ATTRIBUTE not in got.text
    # reading plat/* is not acting for it; writing apps/* is not a consumer named
    assert (await callers["plat-dash"].get(f"/states/{NET}")).status_code == 403
    assert (await callers["apps-ci"].get(f"/states/{NET}")).status_code == 403
    shown = await _gql(
        callers["dash"], f'{{ state(name: "{NET}") {{ outputReaders {{ tokens states }} }} }}'
    )
    assert shown["data"]["state"]["outputReaders"] == {"tokens": ["auditor"], "states": ["plat/*"]}
    log = [(e["action"], e["actor"], e["detail"].get("sensitive")) for e in await events(conn, NET)]
    assert log[-3:] == [
        ("output-readers", "net-ci", None),
        ("read-outputs", "auditor", True),
        ("read-outputs", "plat-pr", True),
    ]
    viewer = await _gql(callers["plat-pr"], VIEWER, name=NET)
    assert viewer["data"]["viewer"] == {
        "name": "plat-pr",
        "role": "PLAN",
        "on": {"can": ["outputs", "sensitiveOutputs"]},
    }


async def test_an_encrypted_state_is_not_reduced(callers, conn) -> None:
    body = tofu().encrypt(_net())
    assert (await callers["net-ci"].post("/states/net/sealed", content=body)).is_success
    refused = await callers["dash"].get("/states/net/sealed")
    assert refused.status_code == 403 and "encrypted by OpenTofu" in refused.json()["error"]
    assert (await callers["net-ci"].get("/states/net/sealed")).content == body
