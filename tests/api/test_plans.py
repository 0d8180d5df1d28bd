"""Plans through GraphQL and POST /states/{name}/plans, over states written through the
HTTP backend: changes, impact within and across states, stale consumers, policy
findings, staleness, refusals and access."""

import json
from typing import Any

import httpx

from app.access import Role
from app.api.plans.types import plan_id
from app.graph.retention import prune
from tests.helpers.app import BOOT, MakeToken, as_token
from tests.helpers.graphql import error_codes, gql
from tests.helpers.links import remote
from tests.helpers.plans import as_bytes, change, plan
from tests.helpers.states import resource, state

JSON = {"Content-Type": "application/json"}
HERE = "http://test/states/"
VPC = {"id": "vpc-0a1b2c3d", "cidr": "10.0.0.0/16", "tags": {"env": "prod"}}


def _producer(serial: int = 1, vpc_id: str = "vpc-0a1b2c3d") -> bytes:
    return state(
        [
            resource("aws_vpc", "main", attributes={**VPC, "id": vpc_id}),
            resource(
                "aws_subnet",
                "a",
                attributes={"id": "subnet-1", "vpc_id": vpc_id},
                depends_on=["aws_vpc.main"],
            ),
            resource(
                "aws_instance",
                "web",
                attributes={"id": "i-1"},
                depends_on=["aws_subnet.a", "aws_vpc.main"],
            ),
        ],
        serial=serial,
        outputs={"vpc_id": {"value": vpc_id, "type": "string"}},
    )


def _consumer() -> bytes:
    return state(
        [
            remote("net", HERE + "team%2Fnet", {"vpc_id": "vpc-0a1b2c3d"}),
            resource(
                "aws_security_group",
                "sg",
                attributes={"id": "sg-1"},
                depends_on=["data.terraform_remote_state.net"],
            ),
        ]
    )


def replace_vpc(prior_id: str = "vpc-0a1b2c3d") -> dict[str, Any]:
    prior = {
        "aws_vpc.main": {**VPC, "id": prior_id},
        "aws_subnet.a": {"id": "subnet-1", "vpc_id": prior_id},
        "aws_instance.web": {"id": "i-1"},
    }
    new = {**VPC, "cidr": "10.1.0.0/16", "id": None, "tags": {"env": "prod", "open": "yes"}}
    return plan(
        [
            change(
                "aws_vpc.main",
                ["delete", "create"],
                {**VPC, "id": prior_id},
                new,
                unknown={"id": True},
            ),
            change("aws_subnet.a", ["no-op"], prior["aws_subnet.a"], prior["aws_subnet.a"]),
            change("aws_instance.web", ["no-op"], {"id": "i-1"}, {"id": "i-1"}),
        ],
        prior=prior,
        outputs={
            "vpc_id": {
                "actions": ["update"],
                "before": prior_id,
                "after": None,
                "after_unknown": True,
                "before_sensitive": False,
                "after_sensitive": False,
            }
        },
    )


async def _write(client: httpx.AsyncClient, name: str, body: bytes) -> None:
    response = await client.post(f"/states/{name}", content=body, headers=JSON)
    assert response.status_code == 200, response.text


async def _states(client: httpx.AsyncClient) -> None:
    await _write(client, "team/net", _producer())
    await _write(client, "team/app", _consumer())


SUBMIT = """mutation($state: String!, $plan: JSON!) { submitPlan(state: $state, plan: $plan) {
  id state baseSerial stale blocked summary { action count }
  changes { address action attributes { path before after sensitive } }
  outputChanges { name action before after }
  impact { state address depth path pathStates via }
  cross: impact(crossStates: true) { state address depth pathStates via }
  staleConsumers { consumer address output before after }
  violations { policy severity enforce address opened }
  markdown } }"""
POLICY = """mutation($input: CreatePolicyInput!) { createPolicy(input: $input) { name } }"""


async def test_a_replacing_plan_reaches_its_dependents_and_consumers(client) -> None:
    await _states(client)
    await gql(
        client,
        POLICY,
        {
            "input": {
                "name": "open-vpc",
                "severity": "CRITICAL",
                "resourceType": "aws_vpc",
                "condition": '$.tags.open == "yes"',
                "enforce": True,
            }
        },
    )
    found = (await gql(client, SUBMIT, {"state": "team/net", "plan": replace_vpc()}))["submitPlan"]
    assert (found["state"], found["baseSerial"], found["stale"]) == ("team/net", 1, False)
    assert {c["action"]: c["count"] for c in found["summary"]} == {"REPLACE": 1, "NO_OP": 2}
    vpc = next(c for c in found["changes"] if c["address"] == "aws_vpc.main")
    assert vpc["action"] == "REPLACE"
    paths = {a["path"]: a for a in vpc["attributes"]}
    assert paths["id"]["after"] == "(known after apply)"
    assert (paths["cidr"]["before"], paths["cidr"]["after"]) == ("10.0.0.0/16", "10.1.0.0/16")
    assert paths["tags.open"]["after"] == "yes" and "tags.env" not in paths
    # the instance depends on the VPC through the subnet too: one hop further, by it
    assert found["impact"] == [
        {
            "state": "team/net",
            "address": "aws_subnet.a",
            "depth": 1,
            "path": ["aws_vpc.main", "aws_subnet.a"],
            "pathStates": ["team/net", "team/net"],
            "via": ["aws_vpc.main"],
        },
        {
            "state": "team/net",
            "address": "aws_instance.web",
            "depth": 2,
            "path": ["aws_vpc.main", "aws_subnet.a", "aws_instance.web"],
            "pathStates": ["team/net", "team/net", "team/net"],
            "via": ["aws_vpc.main"],
        },
    ]
    cross = {(m["state"], m["address"]): m["depth"] for m in found["cross"]}
    assert cross[("team/app", "data.terraform_remote_state.net")] == 1
    assert cross[("team/app", "aws_security_group.sg")] == 2
    assert found["staleConsumers"] == [
        {
            "consumer": "team/app",
            "address": "data.terraform_remote_state.net",
            "output": "vpc_id",
            "before": "vpc-0a1b2c3d",
            "after": "(known after apply)",
        }
    ]
    assert found["violations"] == [
        {
            "policy": "open-vpc",
            "severity": "critical",
            "enforce": True,
            "address": "aws_vpc.main",
            "opened": True,
        }
    ]
    assert found["blocked"] is True
    assert "team/app" in found["markdown"] and "aws_vpc.main" in found["markdown"]
    listed = await gql(client, '{ plans(state: "team/net") { id stale } }')
    assert listed["plans"] == [{"id": found["id"], "stale": False}]
    events = await gql(
        client, '{ events(state: "team/net", first: 1) { edges { node { action detail } } } }'
    )
    event = events["events"]["edges"][0]["node"]
    assert (event["action"], plan_id(event["detail"]["plan"])) == (
        "plan-submitted",
        plan_id(found["id"]),
    )


async def test_a_plan_after_another_write_is_stale(client) -> None:
    await _states(client)
    await _write(client, "team/net", _producer(serial=2, vpc_id="vpc-9f8e7d6c"))
    found = (await gql(client, SUBMIT, {"state": "team/net", "plan": replace_vpc()}))["submitPlan"]
    assert (found["baseSerial"], found["stale"]) == (2, True)
    fresh = await gql(client, SUBMIT, {"state": "team/net", "plan": replace_vpc("vpc-9f8e7d6c")})
    assert fresh["submitPlan"]["stale"] is False


async def test_post_answers_the_analysis(client) -> None:
    await _states(client)
    response = await client.post(
        "/states/team/net/plans", content=as_bytes(replace_vpc()), headers=JSON
    )
    assert response.status_code == 201, response.text
    report = response.json()
    assert report["staleConsumers"][0]["consumer"] == "team/app"
    assert {m["address"] for m in report["impact"]} >= {"aws_subnet.a", "aws_instance.web"}
    # the state itself is untouched: a GET still reads it
    assert (await client.get("/states/team/net")).json()["serial"] == 1
    html = {"Accept": "text/html"}
    state_page = await client.get("/ui/state", params={"name": "team/net"}, headers=html)
    assert "/ui/plan?state=team%2Fnet" in state_page.text
    listing = await client.get("/ui/plan", params={"state": "team/net"}, headers=html)
    assert f"/ui/plan?id={report['id']}" in listing.text
    page = await client.get("/ui/plan", params={"id": report["id"]}, headers=html)
    assert page.status_code == 200
    assert 'data-depth="2"' in page.text and "aws_instance.web" in page.text
    assert "team/app" in page.text  # its stale consumer and its impact there


BAD: list[tuple[str, bytes]] = [
    ("not JSON", b"not json at all"),
    ("truncated", as_bytes(replace_vpc())[:-20]),
    ("format_version 2", as_bytes(plan([], version="2.0"))),
    ("a state, not a plan", _producer()),
    ("U+0000", as_bytes(replace_vpc()).replace(b'"vpc-0a1b2c3d"', b'"vpc\\u0000"', 1)),
    ("5,000 digits", as_bytes(replace_vpc()).replace(b'"1.9.8"', b"1" + b"0" * 4999, 1)),
    (
        "another lineage",
        as_bytes(
            plan([change("aws_s3_bucket.x", ["update"], {}, {})], prior={"aws_s3_bucket.x": {}})
        ),
    ),
]


async def test_bad_plans_are_refused_with_reasons(client) -> None:
    await _states(client)
    for what, body in BAD:
        response = await client.post("/states/team/net/plans", content=body, headers=JSON)
        assert response.status_code == 400, (what, response.status_code, response.text)
        assert response.json()["error"], what
    huge = b" " * (65 * 1024 * 1024)
    response = await client.post("/states/team/net/plans", content=huge, headers=JSON)
    assert response.status_code == 413
    # the same through GraphQL, each body as the `plan` variable: 400, or a coded error
    for what, body in BAD:
        request = b'{"query": %s, "variables": {"state": "team/net", "plan": %s}}' % (
            json.dumps(SUBMIT).encode(),
            body,
        )
        response = await client.post("/graphql", content=request, headers=JSON)
        if response.status_code == 200:
            codes = [e["extensions"]["code"] for e in response.json()["errors"]]
            assert codes == ["BAD_INPUT"], (what, response.text)
        else:
            assert response.status_code == 400, (what, response.status_code, response.text)
    codes = await error_codes(
        client, SUBMIT, {"state": "team/net", "plan": {"format_version": "0.1"}}
    )
    assert codes == ["BAD_INPUT"]
    codes = await error_codes(client, SUBMIT, {"state": "team/net", "plan": [1]})
    assert codes == ["BAD_INPUT"]


async def test_a_reader_plans_what_it_reads_and_sees_only_that(
    closed_app, conn, db_token: MakeToken
) -> None:
    async with as_token(closed_app, BOOT, JSON) as admin:
        await _states(admin)
    net_only = await db_token("net-reader", Role.READ, states=["team/net"])
    async with as_token(closed_app, net_only, JSON) as reader:
        found = (await gql(reader, SUBMIT, {"state": "team/net", "plan": replace_vpc()}))[
            "submitPlan"
        ]
        assert found["cross"] and {m["state"] for m in found["cross"]} == {"team/net"}
        assert found["staleConsumers"] == []
        assert "team/app" not in found["markdown"]
        again = await gql(reader, '{ plans(state: "team/net") { id } }')
        assert [p["id"] for p in again["plans"]] == [found["id"]]
        codes = await error_codes(reader, SUBMIT, {"state": "team/app", "plan": replace_vpc()})
        assert codes == ["FORBIDDEN"] or codes == ["NOT_FOUND"]
        response = await reader.post(
            "/states/team/app/plans", content=as_bytes(replace_vpc()), headers=JSON
        )
        assert response.status_code in (403, 404)
    await conn.execute("DELETE FROM states")


NODE = """query($id: ID!) { node(id: $id) { id ... on TerraformPlan { state stale } } }"""


async def test_a_plan_is_a_node(client) -> None:
    await _states(client)
    found = (await gql(client, SUBMIT, {"state": "team/net", "plan": replace_vpc()}))["submitPlan"]
    node = (await gql(client, NODE, {"id": found["id"]}))["node"]
    assert node == {"id": found["id"], "state": "team/net", "stale": False}
    # the bare id (the HTTP answer's, the event's) finds it too
    bare = str(plan_id(found["id"]))
    by_bare = await gql(client, "query($id: ID!) { terraformPlan(id: $id) { id } }", {"id": bare})
    assert by_bare["terraformPlan"]["id"] == found["id"]
    assert bare not in found["id"]  # a global id, not the UUID itself


async def test_a_node_of_a_state_the_caller_may_not_read_is_null(
    closed_app, conn, db_token: MakeToken
) -> None:
    async with as_token(closed_app, BOOT, JSON) as admin:
        await _states(admin)
        found = (await gql(admin, SUBMIT, {"state": "team/app", "plan": _app_plan()}))["submitPlan"]
    net_only = await db_token("net-only", Role.READ, states=["team/net"])
    async with as_token(closed_app, net_only, JSON) as reader:
        assert (await gql(reader, NODE, {"id": found["id"]}))["node"] is None
        assert await gql(reader, '{ plans(state: "team/app") { id } }') == {"plans": []}
    await conn.execute("DELETE FROM states")


def _app_plan() -> dict[str, Any]:
    """A plan of the consumer state: its security group updated."""
    prior = {"aws_security_group.sg": {"id": "sg-1"}}
    return plan(
        [change("aws_security_group.sg", ["update"], {"id": "sg-1"}, {"id": "sg-1", "x": 1})],
        prior=prior,
    )


RESOLVING = """mutation($state: String!, $plan: JSON!) { submitPlan(state: $state, plan: $plan) {
  blocked violations { policy address opened } } }"""


async def test_violations_the_plan_would_resolve(client) -> None:
    """Open violations on what the plan deletes, or whose new values no longer match, are
    findings with opened: false; those it leaves matching are not findings at all."""
    await _states(client)
    for name, rtype, condition in [
        ("old-cidr", "aws_vpc", '$.cidr == "10.0.0.0/16"'),
        ("prod-vpc", "aws_vpc", '$.tags.env == "prod"'),
        ("no-web", "aws_instance", '$.id == "i-1"'),
    ]:
        policy = {"name": name, "severity": "WARNING", "resourceType": rtype}
        await gql(client, POLICY, {"input": {**policy, "condition": condition, "enforce": True}})
    prior = {
        "aws_vpc.main": {**VPC},
        "aws_subnet.a": {"id": "subnet-1", "vpc_id": VPC["id"]},
        "aws_instance.web": {"id": "i-1"},
    }
    document = plan(
        [
            change("aws_vpc.main", ["update"], VPC, {**VPC, "cidr": "10.9.0.0/16"}),
            change("aws_subnet.a", ["no-op"], prior["aws_subnet.a"], prior["aws_subnet.a"]),
            change("aws_instance.web", ["delete"], {"id": "i-1"}, None),
        ],
        prior=prior,
    )
    found = (await gql(client, RESOLVING, {"state": "team/net", "plan": document}))["submitPlan"]
    assert found["violations"] == [
        {"policy": "no-web", "address": "aws_instance.web", "opened": False},
        {"policy": "old-cidr", "address": "aws_vpc.main", "opened": False},
    ]
    assert found["blocked"] is False  # enforced, but resolved: nothing blocks
    response = await client.post("/states/team/net/plans", content=as_bytes(document), headers=JSON)
    report = response.json()
    assert [v["opened"] for v in report["violations"]] == [False, False]
    assert "would resolve **no-web**" in report["markdown"]


PAGED = """mutation($state: String!, $plan: JSON!) { submitPlan(state: $state, plan: $plan) {
  all: changes { address }
  second: changes(first: 1, after: "0") { address }
  replaced: changes(action: REPLACE) { address }
  impact(first: 1) { address }
  rest: impact(first: 5, after: "0") { address } } }"""


async def test_changes_and_impact_are_paged_and_filtered(client) -> None:
    await _states(client)
    found = (await gql(client, PAGED, {"state": "team/net", "plan": replace_vpc()}))["submitPlan"]
    addresses = [c["address"] for c in found["all"]]
    assert addresses == sorted(addresses) and len(addresses) == 3
    assert [c["address"] for c in found["second"]] == addresses[1:2]
    assert found["replaced"] == [{"address": "aws_vpc.main"}]
    assert found["impact"] == [{"address": "aws_subnet.a"}]
    assert found["rest"] == [{"address": "aws_instance.web"}]
    codes = await error_codes(
        client,
        PAGED.replace('after: "0"', 'after: "x"', 1),
        {"state": "team/net", "plan": replace_vpc()},
    )
    assert codes == ["BAD_INPUT"]


async def test_the_markdown_is_the_same_for_the_same_plan_and_graph(client) -> None:
    await _states(client)
    first = (await gql(client, SUBMIT, {"state": "team/net", "plan": replace_vpc()}))["submitPlan"]
    again = (await gql(client, SUBMIT, {"state": "team/net", "plan": replace_vpc()}))["submitPlan"]
    assert first["id"] != again["id"] and first["markdown"] == again["markdown"]


async def test_a_plan_goes_with_the_version_it_was_read_against(client, conn) -> None:
    await _states(client)
    found = (await gql(client, SUBMIT, {"state": "team/net", "plan": replace_vpc()}))["submitPlan"]
    for serial in (2, 3):
        await _write(client, "team/net", _producer(serial=serial))
    pruned = await prune(conn, state_glob="team/net", keep_last=1, keep_days=None, actor="t")
    assert pruned, "the versions before the last are pruned"
    assert (await gql(client, NODE, {"id": found["id"]}))["node"] is None
    assert await gql(client, '{ plans(state: "team/net") { id } }') == {"plans": []}
