"""IaC through its interfaces, against the real server: plan and apply over GraphQL, the
state view over GraphQL and REST, export (the CLI: tests/test_cli.py)."""

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.helpers.graphql import error_codes, gql, post
from tests.helpers.iac import DOCUMENT, RESOURCE_LINES, SLUG
from tests.helpers.live_server import LiveServer, server_fixture

server = server_fixture(scope="module")

ACTIONS = ("create", "update", "delete", "move", "adopt", "orphaned", "noop", "insert", "skip")
CREATED = {**dict.fromkeys(ACTIONS, 0), "create": 4, "insert": 2}
UNCHANGED = {**dict.fromkeys(ACTIONS, 0), "noop": 4, "skip": 2}
PUBLIC_KEYS = {"system", "resource_type", "ref", "resource_id", "table_id", "updated_at"}
UTC_SECOND = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")

PLAN = """mutation($scope: String!, $document: String!) {
  plan(scope: $scope, document: $document) {
    hash system warnings
    summary { create update delete move adopt orphaned noop insert skip }
    actions { action kind ref reason line changes { field desired lastApplied live reason } }
  }
}"""
APPLY = """mutation($scope: String!, $document: String!, $hash: String!) {
  apply(scope: $scope, document: $document, hash: $hash) {
    stateName
    summary { create update delete move adopt orphaned noop insert skip }
    version { serial state { name kind } resources { edges { node { address type } } } }
  }
}"""
IAC_STATE = """query($scope: String!, $system: String) {
  iacState(scope: $scope, system: $system) {
    system resourceType ref resourceId tableId updatedAt
  }
}"""
EXPORT = 'query($scope: String!) { export(scope: $scope, system: "crm") }'
LIVE = """query($slug: String!) {
  scope(slug: $slug) { tables { id name columns { id name } views { id name } } }
}"""


@pytest.fixture
async def http(server: LiveServer, conn) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the real server, on an emptied database holding the scope SLUG."""
    async with httpx.AsyncClient(
        base_url=server.url, timeout=60, headers={"Content-Type": "application/json"}
    ) as client:
        await gql(
            client,
            "mutation($s: String!) { createScope(slug: $s, name: $s) { id } }",
            {"s": SLUG},
        )
        yield client


async def _plan(client: httpx.AsyncClient, document: str = DOCUMENT) -> dict[str, Any]:
    return (await gql(client, PLAN, {"scope": SLUG, "document": document}))["plan"]


async def _apply(client: httpx.AsyncClient, plan_hash: str) -> dict[str, Any]:
    variables = {"scope": SLUG, "document": DOCUMENT, "hash": plan_hash}
    return (await gql(client, APPLY, variables))["apply"]


def _by_resource(plan: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(a["kind"], a["ref"]): a for a in plan["actions"] if a["kind"] != "record"}


async def test_plan_apply_replan_and_stale_hashes(http) -> None:
    planned = await _plan(http)
    assert planned["system"] == "crm" and planned["warnings"] == []
    assert re.fullmatch(r"[0-9a-f]{64}", planned["hash"])
    assert planned["summary"] == CREATED
    resources = _by_resource(planned)
    assert {key: a["line"] for key, a in resources.items()} == RESOURCE_LINES
    assert {a["action"] for a in resources.values()} == {"create"}
    records = [a for a in planned["actions"] if a["kind"] == "record"]
    assert [(a["action"], a["line"]) for a in records] == [("insert", 6), ("insert", 7)]
    name = next(c for c in resources["table", "contacts"]["changes"] if c["field"] == "name")
    assert (name["desired"], name["lastApplied"], name["live"]) == ("Contacts", None, None)
    assert await _plan(http) == planned  # deterministic
    assert (await gql(http, IAC_STATE, {"scope": SLUG}))["iacState"] == []  # plan writes nothing

    applied = await _apply(http, planned["hash"])
    assert applied["stateName"] == f"iac:{SLUG}/crm"
    assert applied["summary"] == CREATED
    version = applied["version"]
    assert version["serial"] == 1
    assert version["state"] == {"name": f"iac:{SLUG}/crm", "kind": "IAC"}
    addresses = {e["node"]["address"]: e["node"]["type"] for e in version["resources"]["edges"]}
    assert addresses == {ref: kind for kind, ref in RESOURCE_LINES}

    replanned = await _plan(http)
    assert replanned["summary"] == UNCHANGED
    assert {a["action"] for a in replanned["actions"]} == {"noop", "skip"}
    assert all(a["changes"] == [] for a in replanned["actions"])

    stale = {"scope": SLUG, "document": DOCUMENT}
    for old_hash in ("0" * 64, planned["hash"]):  # made up; reviewed before the first apply
        codes = await error_codes(http, APPLY, {**stale, "hash": old_hash})
        assert codes == ["STALE_PLAN"]
    history = await gql(
        http,
        "query($n: String!) { state(name: $n) { versions { totalCount } } }",
        {"n": applied["stateName"]},
    )
    assert history["state"]["versions"]["totalCount"] == 1


async def test_a_bad_document_is_bad_input_with_every_error_by_line(http) -> None:
    document = (
        '{"kind": "header", "system": "crm", "version": 1}\n'
        '{"kind": "table", "ref": "contacts", "spec": {"name": "C", '
        '"settings": {"column_mapping": {}}}}\n'
        '{"kind": "column", "table": "contacts"\n'
    )
    body = await post(http, PLAN, {"scope": SLUG, "document": document})
    [error] = body["errors"]
    assert error["extensions"]["code"] == "BAD_INPUT"
    errors = error["extensions"]["detail"]["errors"]
    assert [(e["line"], e["kind"], e["ref"]) for e in errors] == [
        (2, "table", "contacts"),
        (3, None, None),
    ]
    assert errors[0]["message"] == (
        "settings.column_mapping is server-owned and cannot be set via IaC"
    )
    apply = {"scope": SLUG, "document": document, "hash": "0" * 64}
    assert await error_codes(http, APPLY, apply) == ["BAD_INPUT"]
    # A lone surrogate (escaped, so the body is ASCII) is refused where the body is read.
    unpaired = {"scope": SLUG, "document": DOCUMENT.replace("People", "\ud800")}
    response = await http.post(
        "/graphql",
        content=json.dumps({"query": PLAN, "variables": unpaired}),
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json()["code"] == "BAD_INPUT"
    assert "surrogate" in response.json()["error"]
    assert await error_codes(http, PLAN, {"scope": "nope", "document": DOCUMENT}) == ["NOT_FOUND"]
    assert await error_codes(http, IAC_STATE, {"scope": "nope"}) == ["NOT_FOUND"]


async def test_state_binds_refs_to_live_ids_over_graphql_and_rest(http) -> None:
    await _apply(http, (await _plan(http))["hash"])
    rows = (await gql(http, IAC_STATE, {"scope": SLUG, "system": "crm"}))["iacState"]
    [table] = (await gql(http, LIVE, {"slug": SLUG}))["scope"]["tables"]
    live = {
        "contacts": table["id"],
        **{f"contacts.{c['name'].lower()}": c["id"] for c in table["columns"]},
        **{f"contacts.{v['name'].lower()}": v["id"] for v in table["views"]},
    }
    assert {r["ref"]: r["resourceId"] for r in rows} == live
    assert {(r["resourceType"], r["ref"]) for r in rows} == set(RESOURCE_LINES)
    assert {(r["system"], r["tableId"]) for r in rows} == {("crm", table["id"])}
    assert all(UTC_SECOND.fullmatch(r["updatedAt"]) for r in rows)
    every_system = await gql(http, IAC_STATE, {"scope": SLUG})
    assert every_system["iacState"] == rows
    other = await gql(http, IAC_STATE, {"scope": SLUG, "system": "billing"})
    assert other["iacState"] == []

    response = await http.get(f"/scopes/{SLUG}/tables/iac/state", params={"system": "crm"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    served = response.json()
    assert all(set(row) == PUBLIC_KEYS for row in served)
    assert [
        (r["system"], r["resource_type"], r["ref"], r["resource_id"], r["table_id"]) for r in served
    ] == [(r["system"], r["resourceType"], r["ref"], r["resourceId"], r["tableId"]) for r in rows]
    assert [r["updated_at"] for r in served] == [r["updatedAt"] for r in rows]
    missing = await http.get("/scopes/nope/tables/iac/state", params={"system": "crm"})
    assert missing.status_code == 404
    assert missing.json()["code"] == "NOT_FOUND" and missing.json()["error"]


async def test_an_export_plans_with_no_changes(http) -> None:
    await _apply(http, (await _plan(http))["hash"])
    exported = (await gql(http, EXPORT, {"scope": SLUG}))["export"]
    assert exported.splitlines()[0].startswith("{")
    replanned = await _plan(http, exported)
    assert replanned["summary"] == UNCHANGED
    assert (await _plan(http, exported)) == replanned
