"""Policies through their interfaces: GraphQL (manage, list violations and events), the
IaC plan and apply (an enforced policy refuses an apply, the fixed document goes
through). The `infragraph policy` CLI: tests/test_policy_cli.py."""

from typing import Any

import httpx

from tests.helpers.graphql import error_codes, gql, post
from tests.helpers.states import PASSWORD, resource, state

CREATE = """mutation($input: CreatePolicyInput!) {
  createPolicy(input: $input) {
    id name description severity resourceType states provider condition enforce createdBy
  }
}"""
UPDATE = """mutation($input: UpdatePolicyInput!) {
  updatePolicy(input: $input) { name severity condition states enforce }
}"""
DELETE = "mutation($name: String!) { deletePolicy(name: $name) { name } }"
POLICIES = """query($first: Int, $after: String) {
  policies(first: $first, after: $after) {
    totalCount pageInfo { hasNextPage endCursor } edges { node { name severity } }
  }
}"""
VIOLATIONS = """query($state: String, $policy: String, $open: Boolean, $first: Int,
                     $after: String) {
  violations(state: $state, policy: $policy, open: $open, first: $first, after: $after) {
    totalCount
    pageInfo { hasNextPage endCursor }
    edges { node {
      open
      policy { name severity }
      resource { address state { name kind } }
      since { serial time actor }
      resolved { serial actor }
    } }
  }
}"""
EVENTS = """query($state: String!) {
  events(state: $state) { edges { node { action actor serial detail } } }
}"""

PUBLIC_BUCKET = {
    "name": "public-bucket",
    "description": "S3 buckets readable by anyone",
    "severity": "CRITICAL",
    "resourceType": "aws_s3_bucket",
    "states": "prod/*",
    "condition": '$.acl == "public-read"',
}


def buckets(serial: int, **acls: str) -> bytes:
    return state(
        [resource("aws_s3_bucket", name, attributes={"acl": acl}) for name, acl in acls.items()],
        serial=serial,
    )


async def _write(client: httpx.AsyncClient, name: str, body: bytes) -> None:
    response = await client.post(f"/states/{name}", content=body)
    assert response.status_code == 200, response.text


async def _violations(client: httpx.AsyncClient, **variables: Any) -> dict[str, Any]:
    return (await gql(client, VIOLATIONS, variables))["violations"]


def _seen(connection: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (
            e["node"]["resource"]["state"]["name"],
            e["node"]["resource"]["address"],
            e["node"]["policy"]["name"],
            e["node"]["since"]["serial"],
            e["node"]["resolved"] and e["node"]["resolved"]["serial"],
        )
        for e in connection["edges"]
    ]


async def test_create_list_and_find_violations_over_graphql(client: httpx.AsyncClient) -> None:
    await _write(client, "prod/s3", buckets(1, a="public-read", b="private"))
    await _write(client, "stage/s3", buckets(1, a="public-read"))  # not covered
    created = (await gql(client, CREATE, {"input": PUBLIC_BUCKET}))["createPolicy"]
    assert {k: created[k] for k in PUBLIC_BUCKET} == PUBLIC_BUCKET
    assert (created["provider"], created["enforce"], created["createdBy"]) == (
        None,
        False,
        "anonymous",
    )

    open_now = await _violations(client)
    [edge] = open_now["edges"]
    node = edge["node"]
    assert node["open"] and node["resolved"] is None
    assert node["policy"] == {"name": "public-bucket", "severity": "CRITICAL"}
    assert node["resource"] == {
        "address": "aws_s3_bucket.a",
        "state": {"name": "prod/s3", "kind": "TERRAFORM"},
    }
    assert (node["since"]["serial"], node["since"]["actor"]) == (1, "anonymous")

    await _write(client, "prod/s3", buckets(2, a="private", b="public-read"))
    everything = await _violations(client, open=None)
    assert _seen(everything) == [
        ("prod/s3", "aws_s3_bucket.a", "public-bucket", 1, 2),
        ("prod/s3", "aws_s3_bucket.b", "public-bucket", 2, None),
    ]
    resolved = await _violations(client, open=False, state="prod/s3", policy="public-bucket")
    assert _seen(resolved) == _seen(everything)[:1]
    first = await _violations(client, open=None, first=1)
    assert first["totalCount"] == 2 and first["pageInfo"]["hasNextPage"]
    rest = await _violations(client, open=None, first=1, after=first["pageInfo"]["endCursor"])
    assert _seen(first) + _seen(rest) == _seen(everything)
    assert _seen(await _violations(client, state="stage/s3")) == []

    events = (await gql(client, EVENTS, {"state": "prod/s3"}))["events"]["edges"]
    logged = [(e["node"]["action"], e["node"]["serial"], e["node"]["detail"]) for e in events]
    policy = {"policy": "public-bucket", "severity": "critical", "enforce": False, "count": 1}
    assert [e for e in logged if e[0].startswith("policy-")] == [  # newest first
        ("policy-violated", 2, {**policy, "addresses": ["aws_s3_bucket.b"]}),
        ("policy-resolved", 2, {**policy, "addresses": ["aws_s3_bucket.a"]}),
        ("policy-violated", 1, {**policy, "addresses": ["aws_s3_bucket.a"]}),
    ]


async def test_update_and_delete_over_graphql(client: httpx.AsyncClient) -> None:
    await _write(client, "prod/s3", buckets(1, a="public-read", b="authenticated-read"))
    await gql(client, CREATE, {"input": PUBLIC_BUCKET})
    changes = {"name": "public-bucket", "condition": '$.acl != "private"', "states": None}
    updated = (await gql(client, UPDATE, {"input": changes}))["updatePolicy"]
    assert updated == {
        "name": "public-bucket",
        "severity": "CRITICAL",
        "condition": '$.acl != "private"',
        "states": None,
        "enforce": False,
    }
    assert [v[1] for v in _seen(await _violations(client))] == [
        "aws_s3_bucket.a",
        "aws_s3_bucket.b",
    ]
    await gql(client, CREATE, {"input": {**PUBLIC_BUCKET, "name": "another"}})
    listed = (await gql(client, POLICIES, {"first": 1}))["policies"]
    assert listed["totalCount"] == 2 and listed["pageInfo"]["hasNextPage"]
    assert [e["node"]["name"] for e in listed["edges"]] == ["another"]

    deleted = await gql(client, DELETE, {"name": "public-bucket"})
    assert deleted["deletePolicy"] == {"name": "public-bucket"}
    assert {v[2] for v in _seen(await _violations(client, open=None))} == {"another"}
    assert await error_codes(client, DELETE, {"name": "public-bucket"}) == ["NOT_FOUND"]
    null = {"name": "another", "condition": None}
    assert await error_codes(client, UPDATE, {"input": null}) == ["BAD_INPUT"]


async def test_refusals_are_coded(client: httpx.AsyncClient) -> None:
    invalid = {**PUBLIC_BUCKET, "condition": "$.acl ? (@ = 1)"}
    body = await post(client, CREATE, {"input": invalid})
    [error] = body["errors"]
    assert error["extensions"]["code"] == "BAD_INPUT"
    assert error["message"] == ('invalid condition: syntax error at or near "=" of jsonpath input')
    assert error["extensions"]["detail"]["condition"] == "$.acl ? (@ = 1)"

    db = resource("aws_db_instance", "main", attributes={"pass": "x"}, sensitive=PASSWORD)
    await _write(client, "prod/db", state([db]))
    for condition in ('$.password == "x"', '$.master_token == "x"'):
        sensitive = {**PUBLIC_BUCKET, "resourceType": "aws_db_*", "condition": condition}
        body = await post(client, CREATE, {"input": sensitive})
        assert body["errors"][0]["extensions"]["code"] == "BAD_INPUT"
        assert "a policy never reads sensitive values" in body["errors"][0]["message"]

    await gql(client, CREATE, {"input": PUBLIC_BUCKET})
    assert await error_codes(client, CREATE, {"input": PUBLIC_BUCKET}) == ["CONFLICT"]
    assert (await gql(client, POLICIES))["policies"]["totalCount"] == 1


# --- IaC: plans show what an apply would open; enforced policies refuse the apply ----------

SCOPE = "crm"
PLAN = """mutation($scope: String!, $document: String!) {
  plan(scope: $scope, document: $document) {
    hash violations { policy severity enforce state address }
  }
}"""
APPLY = """mutation($scope: String!, $document: String!, $hash: String!) {
  apply(scope: $scope, document: $document, hash: $hash) { stateName version { serial } }
}"""
IAC_STATE = 'query { iacState(scope: "crm") { ref } }'
HEADER = '{"kind": "header", "system": "crm", "version": 1}\n'
EMAIL = '{"kind": "column", "table": "contacts", "ref": "email", "spec": {"name": "Email", "type": "text"}}\n'  # noqa: E501
UNDESCRIBED = (
    HEADER + '{"kind": "table", "ref": "contacts", "spec": {"name": "Contacts"}}\n' + EMAIL
)
DESCRIBED = (
    HEADER
    + '{"kind": "table", "ref": "contacts", "spec": {"name": "Contacts", "description": "People"}}\n'  # noqa: E501
    + EMAIL
)
DESCRIBED_TABLES = {
    "name": "described-tables",
    "severity": "CRITICAL",
    "resourceType": "table",
    "states": "iac:*",
    "condition": "!exists($.description)",
    "enforce": True,
}
REQUIRED_EMAILS = {
    "name": "required-emails",
    "severity": "WARNING",
    "resourceType": "column",
    "condition": '$.type == "text" && !exists($.required)',
}


async def _plan(client: httpx.AsyncClient, document: str) -> dict[str, Any]:
    return (await gql(client, PLAN, {"scope": SCOPE, "document": document}))["plan"]


async def test_an_enforced_policy_refuses_an_iac_apply_until_the_document_is_fixed(
    client: httpx.AsyncClient,
) -> None:
    await gql(client, 'mutation { createScope(slug: "crm", name: "CRM") { id } }')
    await gql(client, CREATE, {"input": DESCRIBED_TABLES})
    await gql(client, CREATE, {"input": REQUIRED_EMAILS})

    planned = await _plan(client, UNDESCRIBED)
    assert planned["violations"] == [
        {
            "policy": "described-tables",
            "severity": "CRITICAL",
            "enforce": True,
            "state": "iac:crm/crm",
            "address": "contacts",
        },
        {
            "policy": "required-emails",
            "severity": "WARNING",
            "enforce": False,
            "state": "iac:crm/crm",
            "address": "contacts.email",
        },
    ]
    variables = {"scope": SCOPE, "document": UNDESCRIBED, "hash": planned["hash"]}
    body = await post(client, APPLY, variables)
    [error] = body["errors"]
    assert error["extensions"]["code"] == "POLICY_VIOLATION"
    assert error["message"] == (
        "refused by enforced policies: contacts violates described-tables (critical)"
    )
    assert error["extensions"]["detail"] == {
        "violations": [
            {
                "policy": "described-tables",
                "severity": "critical",
                "state": "iac:crm/crm",
                "address": "contacts",
            }
        ]
    }
    # nothing of the apply stayed: no state rows, no graph state, no violations
    assert (await gql(client, IAC_STATE))["iacState"] == []
    assert (await gql(client, '{ state(name: "iac:crm/crm") { name } }'))["state"] is None
    assert (await _violations(client, open=None))["totalCount"] == 0

    fixed = await _plan(client, DESCRIBED)
    assert [v["policy"] for v in fixed["violations"]] == ["required-emails"]  # a warning
    variables = {"scope": SCOPE, "document": DESCRIBED, "hash": fixed["hash"]}
    applied = (await gql(client, APPLY, variables))["apply"]
    assert applied == {"stateName": "iac:crm/crm", "version": {"serial": 1}}
    assert _seen(await _violations(client)) == [
        ("iac:crm/crm", "contacts.email", "required-emails", 1, None)
    ]
    # the warning is open already: planning again shows nothing new
    assert (await _plan(client, DESCRIBED))["violations"] == []

    # a second table without a description: refused, nothing of it applied
    leads = DESCRIBED + '{"kind": "table", "ref": "leads", "spec": {"name": "Leads"}}\n'
    planned = await _plan(client, leads)
    assert [v["address"] for v in planned["violations"]] == ["leads"]
    variables = {"scope": SCOPE, "document": leads, "hash": planned["hash"]}
    assert await error_codes(client, APPLY, variables) == ["POLICY_VIOLATION"]
    refs = (await gql(client, IAC_STATE))["iacState"]
    assert sorted(r["ref"] for r in refs) == ["contacts", "contacts.email"]
