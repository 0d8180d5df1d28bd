"""The graph over GraphQL: states, versions, resources, edges, blast radius, inventory,
search, events, diff, node ids."""

import base64

from app.graph.write.version import write_version
from tests.helpers.graphql import error_codes, gql
from tests.helpers.states import PASSWORD, chain_graph, resource, state


def _app_state(serial: int, *, size: int = 10, password: str = "s3cret") -> bytes:
    return state(
        [
            resource("aws_vpc", "main", attributes={"cidr_block": "10.0.0.0/16"}),
            resource(
                "aws_instance",
                "web",
                keys=[0, 1],
                module="module.app",
                attributes={"size": size, "tags": {"role": "web"}},
                depends_on=["aws_vpc.main"],
            ),
            resource(
                "aws_db_instance",
                "db",
                attributes={"password": password, "engine": "postgres"},
                sensitive=PASSWORD,
                depends_on=["aws_vpc.main"],
            ),
        ],
        serial=serial,
        outputs={
            "vpc": {"value": "vpc-1", "type": "string"},
            "db_password": {"value": password, "type": "string", "sensitive": True},
        },
    )


async def test_states_versions_outputs_lock_and_events(client, conn) -> None:
    await write_version(conn, "team/app", _app_state(1), actor="alice")
    await write_version(conn, "team/app", _app_state(2, size=20), actor="bob")
    await write_version(conn, "other", chain_graph(), actor="alice")
    info = {"ID": "L1", "Who": "carol@host", "Operation": "OperationTypeApply"}
    await conn.execute(
        """INSERT INTO state_locks (state_id, lock_id, info)
           SELECT id, 'L1', $1 FROM states WHERE name = 'team/app'""",
        info,
    )
    data = await gql(
        client,
        """{
          states(filter: {namePrefix: "team/"}) {
            totalCount
            edges { node {
              name kind lineage
              lock { id who operation info }
              currentVersion { serial terraformVersion createdBy resourceCount
                               outputs { name value type sensitive } }
              versions(first: 1) { totalCount pageInfo { hasNextPage endCursor }
                                   edges { node { serial } } }
              version(serial: 1) { serial createdBy }
              missing: version(serial: 7) { serial }
              events { totalCount edges { node { action actor serial } } }
            } }
          }
          state(name: "other") { name currentVersion { resourceCount } }
          nothing: state(name: "nope") { name }
        }""",
    )
    [node] = [e["node"] for e in data["states"]["edges"]]
    assert data["states"]["totalCount"] == 1
    assert node["name"] == "team/app" and node["kind"] == "TERRAFORM"
    assert node["lock"] == {
        "id": "L1",
        "who": "carol@host",
        "operation": "OperationTypeApply",
        "info": info,
    }
    assert node["currentVersion"] == {
        "serial": 2,
        "terraformVersion": "1.15.5",
        "createdBy": "bob",
        "resourceCount": 4,
        "outputs": [
            {"name": "vpc", "value": "vpc-1", "type": "string", "sensitive": False},
            {"name": "db_password", "value": None, "type": "string", "sensitive": True},
        ],
    }
    versions = node["versions"]
    assert versions["totalCount"] == 2 and versions["pageInfo"]["hasNextPage"]
    assert [e["node"]["serial"] for e in versions["edges"]] == [2]
    assert node["version"] == {"serial": 1, "createdBy": "alice"} and node["missing"] is None
    assert node["events"]["totalCount"] == 2
    assert [e["node"] for e in node["events"]["edges"]] == [
        {"action": "write", "actor": "bob", "serial": 2},
        {"action": "write", "actor": "alice", "serial": 1},
    ]
    assert data["state"] == {"name": "other", "currentVersion": {"resourceCount": 18}}
    assert data["nothing"] is None

    older = await gql(
        client,
        """query($after: String) { state(name: "team/app") {
             versions(first: 1, after: $after) { pageInfo { hasNextPage hasPreviousPage }
                                                 edges { node { serial } } } } }""",
        {"after": versions["pageInfo"]["endCursor"]},
    )
    page = older["state"]["versions"]
    assert [e["node"]["serial"] for e in page["edges"]] == [1]
    assert page["pageInfo"] == {"hasNextPage": False, "hasPreviousPage": True}

    events = await gql(
        client, '{ events(state: "other") { totalCount } all: events { totalCount } }'
    )
    assert events == {"events": {"totalCount": 1}, "all": {"totalCount": 3}}


async def test_resources_fields_filters_and_sensitive_values(client, conn) -> None:
    await write_version(conn, "app", _app_state(1), actor="test")
    data = await gql(
        client,
        """{
          resources(filter: {module: "module.app"}) {
            totalCount
            edges { cursor node {
              address mode type name provider module indexKey each
              size: attributes(path: ["size"])
              attributes
              state { name } version { serial }
              dependencies { totalCount edges { node { address } } }
            } }
          }
          db: resources(filter: {type: "aws_db_instance"}) { edges { node {
              attributes password: attributes(path: ["password"]) sensitiveAttributes
              dependents { totalCount } } } }
          vpc: resources(filter: {address: "aws_vpc.main"}) { edges { node {
              dependents { edges { node { address } } } } } }
          web: resources(filter: {attributes: {tags: {role: "web"}}}) { totalCount }
          data: resources(filter: {mode: DATA}) { totalCount }
        }""",
    )
    nodes = [e["node"] for e in data["resources"]["edges"]]
    assert data["resources"]["totalCount"] == 2
    assert nodes[1] == {
        "address": "module.app.aws_instance.web[1]",
        "mode": "MANAGED",
        "type": "aws_instance",
        "name": "web",
        "provider": 'provider["registry.terraform.io/hashicorp/aws"]',
        "module": "module.app",
        "indexKey": 1,
        "each": "list",
        "size": 10,
        "attributes": {"size": 10, "tags": {"role": "web"}},
        "state": {"name": "app"},
        "version": {"serial": 1},
        "dependencies": {"totalCount": 1, "edges": [{"node": {"address": "aws_vpc.main"}}]},
    }
    [db] = [e["node"] for e in data["db"]["edges"]]
    assert db["attributes"] == {"password": None, "engine": "postgres"}
    assert db["password"] is None and db["sensitiveAttributes"] == PASSWORD
    assert db["dependents"] == {"totalCount": 0}
    [vpc] = [e["node"] for e in data["vpc"]["edges"]]
    assert [e["node"]["address"] for e in vpc["dependents"]["edges"]] == [
        "aws_db_instance.db",
        "module.app.aws_instance.web[0]",
        "module.app.aws_instance.web[1]",
    ]
    assert data["web"]["totalCount"] == 2 and data["data"]["totalCount"] == 0


async def test_blast_radius_at_the_root_and_on_a_resource(client, conn) -> None:
    await write_version(conn, "g", chain_graph(), actor="test")
    query = """query($after: String, $direction: Direction!, $maxDepth: Int!) {
      blastRadius(state: "g", address: "terraform_data.r", direction: $direction,
                  maxDepth: $maxDepth, first: 5, after: $after) {
        totalCount pageInfo { hasNextPage endCursor }
        edges { node { depth path resource { address } } }
      }
    }"""
    walked, after = [], None
    while True:
        variables = {"after": after, "direction": "DEPENDENTS", "maxDepth": 12}
        radius = (await gql(client, query, variables))["blastRadius"]
        assert radius["totalCount"] == 17
        walked += [e["node"] for e in radius["edges"]]
        if not radius["pageInfo"]["hasNextPage"]:
            break
        after = radius["pageInfo"]["endCursor"]
    assert len(walked) == 17
    assert walked[3] == {
        "depth": 2,
        "path": ["terraform_data.r", "terraform_data.b", "terraform_data.d"],
        "resource": {"address": "terraform_data.d"},
    }
    assert [n["depth"] for n in walked] == sorted(n["depth"] for n in walked)

    field = await gql(
        client,
        """{ resources(filter: {addressPrefix: "terraform_data.d"}) { edges { node {
              address
              blastRadius(direction: DEPENDENCIES, maxDepth: 1) {
                totalCount edges { node { depth resource { address } } } }
              dependents: blastRadius { totalCount }
           } } } }""",
    )
    [d] = [e["node"] for e in field["resources"]["edges"]]
    assert d["blastRadius"]["totalCount"] == 3
    assert [e["node"]["resource"]["address"] for e in d["blastRadius"]["edges"]] == [
        "terraform_data.b",
        "terraform_data.c",
        "terraform_data.f",
    ]
    assert d["dependents"] == {"totalCount": 2}  # e, then f (f -> d closes the cycle)

    missing = '{ blastRadius(state: "g", address: "terraform_data.zz") { totalCount } }'
    assert await error_codes(client, missing) == ["NOT_FOUND"]


async def test_inventory(client, conn) -> None:
    await write_version(conn, "app", _app_state(1), actor="test")
    await write_version(conn, "g", chain_graph(), actor="test")
    data = await gql(
        client,
        """{ types: inventory(groupBy: TYPE) { key count }
             states: inventory(groupBy: STATE, filter: {provider: "registry.terraform.io/x"}) {
               key count }
             modules: inventory(groupBy: MODULE, filter: {state: "app"}) { key count } }""",
    )
    assert data["types"] == [
        {"key": "terraform_data", "count": 18},
        {"key": "aws_instance", "count": 2},
        {"key": "aws_db_instance", "count": 1},
        {"key": "aws_vpc", "count": 1},
    ]
    assert data["states"] == []
    assert data["modules"] == [{"key": "", "count": 2}, {"key": "module.app", "count": 2}]


async def test_version_diff(client, conn) -> None:
    await write_version(conn, "app", _app_state(1), actor="test")
    await write_version(conn, "app", _app_state(2, size=20, password="new"), actor="test")
    data = await gql(
        client,
        """{ state(name: "app") { currentVersion { diff(against: 1) {
               against added removed
               changed { address changes { path old new sensitive } } } } } }""",
    )
    diff = data["state"]["currentVersion"]["diff"]
    assert diff["against"] == 1 and diff["added"] == [] and diff["removed"] == []
    assert diff["changed"] == [
        {
            "address": "aws_db_instance.db",
            "changes": [{"path": ["password"], "old": None, "new": None, "sensitive": True}],
        },
        *[
            {
                "address": f"module.app.aws_instance.web[{i}]",
                "changes": [{"path": ["size"], "old": 10, "new": 20, "sensitive": False}],
            }
            for i in (0, 1)
        ],
    ]
    missing = '{ state(name: "app") { currentVersion { diff(against: 9) { against } } } }'
    assert await error_codes(client, missing) == ["NOT_FOUND"]


async def test_node_ids(client, conn) -> None:
    await write_version(conn, "app", _app_state(1), actor="test")
    data = await gql(
        client,
        """{ state(name: "app") { id
               currentVersion { id resources(first: 1) { edges { node { id address } } } }
               events { edges { node { id action } } } } }""",
    )
    s = data["state"]
    version = s["currentVersion"]
    resource_node = version["resources"]["edges"][0]["node"]
    event = s["events"]["edges"][0]["node"]
    query = """query($id: ID!) { node(id: $id) { __typename id
        ... on State { name } ... on StateVersion { serial } ... on Resource { address }
        ... on Event { action } } }"""
    expected = {
        s["id"]: {"__typename": "State", "name": "app"},
        version["id"]: {"__typename": "StateVersion", "serial": 1},
        resource_node["id"]: {"__typename": "Resource", "address": resource_node["address"]},
        event["id"]: {"__typename": "Event", "action": "write"},
    }
    for global_id, fields in expected.items():
        assert (await gql(client, query, {"id": global_id}))["node"] == {"id": global_id, **fields}
    gone = base64.b64encode(b"State:00000000-0000-0000-0000-000000000000").decode()
    assert (await gql(client, query, {"id": gone}))["node"] is None
    for bad in ("not-base64!", base64.b64encode(b"State:nope").decode(),
                base64.b64encode(b"Nope:1").decode()):  # fmt: skip
        assert await error_codes(client, query, {"id": bad}) == ["BAD_INPUT"]


async def test_variables_in_the_arguments_of_prefetched_lists(client, conn) -> None:
    # the lists below `resources` are loaded for the whole page from the query's
    # selection (app/api/runtime/lookahead.py), their arguments read from the variables
    await write_version(conn, "vars", _app_state(1), actor="test")
    query = """query($n: Int!, $way: Direction!) {
      resources(first: 5, filter: {addressPrefix: "aws_vpc"}) { edges { node {
        dependents(first: $n) { totalCount edges { node { address } } }
        blastRadius(direction: $way, first: $n) { totalCount } } } } }"""
    for n in (1, 2):
        [vpc] = (await gql(client, query, {"n": n, "way": "DEPENDENTS"}))["resources"]["edges"]
        assert vpc["node"]["dependents"]["totalCount"] == 3
        assert len(vpc["node"]["dependents"]["edges"]) == n
        assert vpc["node"]["blastRadius"]["totalCount"] == 3
