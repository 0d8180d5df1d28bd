"""The configuration graph through GraphQL and POST /states/{name}/configurations, over
states written through the HTTP backend: modules, references with their reasons, the
blast radius following them, versions kept by content, refusals of hostile sections."""

from typing import Any

import asyncpg
import httpx

from app.access import Role
from app.configuration.parse import config_address
from app.graph.retention import prune_state
from tests.helpers.app import BOOT, MakeToken, as_token
from tests.helpers.configurations import network, network_state, plan_with
from tests.helpers.graphql import error_codes, gql

JSON = {"Content-Type": "application/json"}
PUSH = """mutation($state: String!, $plan: JSON!) { pushConfiguration(state: $state, plan: $plan) {
  created configuration { number hash origin variables { name sensitive } } } }"""
RADIUS = """query($address: String!) { blastRadius(state: "team/net", address: $address) {
  edges { node { depth path resource { address } } } } }"""
REFERENCES = """query($address: String!) { resources(filter: {state: "team/net", address: $address})
  { edges { node { references { reason attributes direct resource { address } }
                   referencedBy { reason resource { address } } } } } }"""


async def _write(client: httpx.AsyncClient, body: bytes) -> None:
    response = await client.post("/states/team/net", content=body, headers=JSON)
    assert response.status_code == 200, response.text


async def _depths(client: httpx.AsyncClient, address: str) -> dict[str, int]:
    data = await gql(client, RADIUS, {"address": address})
    return {
        e["node"]["resource"]["address"]: e["node"]["depth"] for e in data["blastRadius"]["edges"]
    }


async def _references(client: httpx.AsyncClient, address: str) -> dict[str, Any]:
    data = await gql(client, REFERENCES, {"address": address})
    return data["resources"]["edges"][0]["node"]


async def test_references_make_the_direct_edges(client: httpx.AsyncClient) -> None:
    await _write(client, network_state())
    # by reduction: the instance is one hop past the subnet
    assert (await _depths(client, "aws_vpc.main"))["aws_instance.web"] == 2
    before = await _references(client, "aws_instance.web")
    assert {(r["resource"]["address"], r["reason"]) for r in before["references"]} == {
        ("aws_subnet.a", "DECLARED"),
        ("aws_vpc.main", "DECLARED"),
    }

    pushed = await gql(client, PUSH, {"state": "team/net", "plan": plan_with(network())})
    assert pushed["pushConfiguration"]["created"] is True
    assert pushed["pushConfiguration"]["configuration"]["variables"] == [
        {"name": "password", "sensitive": True},
        {"name": "parent", "sensitive": False},
    ]
    depths = await _depths(client, "aws_vpc.main")
    assert depths["aws_instance.web"] == 1 and depths["aws_subnet.a"] == 1
    assert depths["module.box[0].aws_s3_bucket.b"] == 1
    assert depths["aws_s3_bucket.logs"] == 2  # through the instance it depends_on
    assert (await _depths(client, "aws_subnet.a"))["aws_instance.web"] == 1
    across = await gql(
        client,
        """{ blastRadius(state: "team/net", address: "aws_vpc.main", crossStates: true) {
             edges { node { depth resource { address } } } } }""",
    )
    assert {
        e["node"]["resource"]["address"]: e["node"]["depth"] for e in across["blastRadius"]["edges"]
    } == depths

    web = await _references(client, "aws_instance.web")
    assert sorted(
        (r["resource"]["address"], r["reason"], r["attributes"], r["direct"])
        for r in web["references"]
    ) == [
        ("aws_subnet.a", "IMPLICIT", ["subnet_id"], True),
        ("aws_vpc.main", "IMPLICIT", ["vpc_security_group_ids"], True),
    ]
    assert web["referencedBy"] == [
        {"reason": "EXPLICIT", "resource": {"address": "aws_s3_bucket.logs"}}
    ]
    logs = await _references(client, "aws_s3_bucket.logs")
    assert {(r["resource"]["address"], r["reason"], r["direct"]) for r in logs["references"]} == {
        ("aws_instance.web", "EXPLICIT", True),
        ("aws_subnet.a", "DECLARED", False),
        ("aws_vpc.main", "DECLARED", False),
    }

    direct = await gql(
        client,
        """{ resources(filter: {state: "team/net", address: "aws_vpc.main"}) { edges { node {
             dependents(direct: true) { edges { node { address } } } } } } }""",
    )
    dependents = direct["resources"]["edges"][0]["node"]["dependents"]["edges"]
    assert [e["node"]["address"] for e in dependents] == [
        "aws_instance.web",
        "aws_subnet.a",
        "module.box[0].aws_s3_bucket.b",
        "module.box[1].aws_s3_bucket.b",
    ]

    # the next version of the state follows the configuration too
    await _write(client, network_state(serial=2))
    assert (await _depths(client, "aws_vpc.main"))["aws_instance.web"] == 1


async def test_modules_versions_and_inventory(client: httpx.AsyncClient) -> None:
    await _write(client, network_state())
    for _ in range(2):
        await gql(client, PUSH, {"state": "team/net", "plan": plan_with(network())})
    data = await gql(
        client,
        """{ state(name: "team/net") {
             modules { key name parent source versionConstraint expansion instances keys
                       resourceCount }
             configurations { number origin } } }""",
    )
    assert data["state"]["configurations"] == [{"number": 1, "origin": "push"}]
    assert data["state"]["modules"] == [
        {
            "key": "module.box",
            "name": "box",
            "parent": "",
            "source": "terraform-aws-modules/s3-bucket/aws",
            "versionConstraint": "~> 4.0",
            "expansion": "count",
            "instances": ["module.box[0]", "module.box[1]"],
            "keys": [0, 1],
            "resourceCount": 2,
        }
    ]
    found = await gql(
        client,
        """{ modules(source: "terraform-aws-modules/s3-bucket/aws") { state key
             versionConstraint } none: modules(source: "other") { key } }""",
    )
    assert found["modules"] == [
        {"state": "team/net", "key": "module.box", "versionConstraint": "~> 4.0"}
    ]
    assert found["none"] == []
    inventory = await gql(client, "{ inventory(groupBy: MODULE_SOURCE) { key count } }")
    assert inventory["inventory"] == [
        {"key": "", "count": 4},
        {"key": "terraform-aws-modules/s3-bucket/aws", "count": 2},
    ]

    changed = network()
    changed["root_module"]["module_calls"]["box"]["version_constraint"] = "~> 5.0"
    pushed = await gql(client, PUSH, {"state": "team/net", "plan": plan_with(changed)})
    assert pushed["pushConfiguration"]["configuration"]["number"] == 2
    again = await gql(client, '{ modules(filter: {versionConstraint: "~> 5.0"}) { key } }')
    assert again["modules"] == [{"key": "module.box"}]


async def test_values_are_not_stored(client: httpx.AsyncClient, conn: asyncpg.Connection) -> None:
    await _write(client, network_state())
    await gql(client, PUSH, {"state": "team/net", "plan": plan_with(network())})
    documents = await conn.fetch("SELECT document::text AS d FROM configurations")
    assert documents and not any("hunter2" in r["d"] or "10.0.0.0" in r["d"] for r in documents)


async def test_a_submitted_plan_records_its_configuration(client: httpx.AsyncClient) -> None:
    await _write(client, network_state())
    response = await client.post("/states/team/net/plans", json=plan_with(network()), headers=JSON)
    assert response.status_code == 201, response.text
    data = await gql(client, '{ state(name: "team/net") { configurations { origin } } }')
    assert data["state"]["configurations"] == [{"origin": "plan"}]


def _hostile() -> dict[str, dict[str, Any]]:
    unknown = network()
    unknown["root_module"]["resources"][0]["surprise"] = 1
    many = network()
    many["root_module"]["resources"][1]["expressions"]["vpc_id"] = {
        "references": ["aws_vpc.main"] * 100_000
    }
    cycle = network()
    box = cycle["root_module"]["module_calls"]["box"]
    box["expressions"] = {"parent": {"references": ["module.box.id"]}}
    box["module"]["outputs"] = {"id": {"expression": {"references": ["var.parent"]}}}
    deep: dict[str, Any] = {"resources": []}
    for i in range(40):
        deep = {"module_calls": {f"m{i}": {"source": "./m", "module": deep}}}
    nested = network()
    block: Any = {"x": {"constant_value": 1}}
    for _ in range(40):
        block = {"inner": [block]}
    nested["root_module"]["resources"][0]["expressions"] = block
    return {
        "unknown key 'surprise'": unknown,
        "more than 50000 references": many,
        "a cycle through module variables and outputs": cycle,
        "module calls nested deeper than 32": {"root_module": deep},
        "blocks nested deeper than 32": nested,
        "no root_module": {"provider_config": {}},
        "expected an object": [],  # type: ignore[dict-item]
    }


async def test_hostile_sections_are_refused(client: httpx.AsyncClient) -> None:
    await _write(client, network_state())
    for reason, section in _hostile().items():
        response = await client.post(
            "/states/team/net/configurations", json=plan_with(section), headers=JSON
        )
        assert response.status_code == 400, (reason, response.text)
        assert reason in response.json()["error"], (reason, response.json())
        assert await error_codes(client, PUSH, {"state": "team/net", "plan": plan_with(section)})
    response = await client.post("/states/team/net/configurations", json={}, headers=JSON)
    assert response.status_code == 400 and "configuration" in response.json()["error"]
    response = await client.post("/states/team/none/configurations", json=plan_with(network()))
    assert response.status_code == 404


async def test_a_read_token_may_not_push(closed_app: Any, db_token: MakeToken) -> None:
    read = await db_token("reader", Role.READ, states=["team/*"])
    plan = await db_token("planner", Role.PLAN, states=["team/*"])
    async with as_token(closed_app, BOOT, JSON) as admin:
        await _write(admin, network_state())
        async with as_token(closed_app, read, JSON) as reader:
            response = await reader.post(
                "/states/team/net/configurations", json=plan_with(network())
            )
            assert response.status_code == 403, response.text
            # its plan is read, and its configuration not recorded
            response = await reader.post("/states/team/net/plans", json=plan_with(network()))
            assert response.status_code == 201, response.text
        data = await gql(admin, '{ state(name: "team/net") { configurations { number } } }')
        assert data["state"]["configurations"] == []
        async with as_token(closed_app, plan, JSON) as planner:
            response = await planner.post(
                "/states/team/net/configurations", json=plan_with(network())
            )
            assert response.status_code == 201, response.text


async def test_sql_config_address_agrees(conn: asyncpg.Connection) -> None:
    addresses = [
        "aws_vpc.main",
        "aws_subnet.a[0]",
        'module.a["x"].aws_b.c[3]',
        'module.a["x]y"].module.b[12].aws_b.c["k.[1]"]',
        r'module.a["q\"]"].data.aws_ami.x["a\\"]',
        'aws_s3_bucket.b["with space"]',
    ]
    rows = await conn.fetch("SELECT config_address(a) AS c FROM unnest($1::text[]) AS a", addresses)
    assert [r["c"] for r in rows] == [config_address(a) for a in addresses]
    assert [r["c"] for r in rows][3] == "module.a.module.b.aws_b.c"


async def test_pruned_and_deleted_versions_take_their_edges(
    client: httpx.AsyncClient, conn: asyncpg.Connection
) -> None:
    await _write(client, network_state())
    await gql(client, PUSH, {"state": "team/net", "plan": plan_with(network())})
    await _write(client, network_state(serial=2))
    await _write(client, network_state(serial=3))
    counts = "SELECT serial, count(*) AS n FROM configured_edges GROUP BY 1 ORDER BY 1"
    assert [(r["serial"], r["n"]) for r in await conn.fetch(counts)] == [(1, 6), (2, 6), (3, 6)]
    state_id = await conn.fetchval("SELECT id FROM states WHERE name = 'team/net'")
    await prune_state(conn, state_id, "team/net", 1, actor="test")
    assert [r["serial"] for r in await conn.fetch(counts)] == [3]
    response = await client.delete("/states/team/net")
    assert response.status_code == 200, response.text
    assert await conn.fetch(counts) == []
    assert await conn.fetchval("SELECT count(*) FROM configurations") == 0
