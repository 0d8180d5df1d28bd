"""Every statement the server runs on a graph table names the state: `state_id`.

That is the distribution column when the graph outgrows one PostgreSQL and moves to
Citus (README, "Scaling out"): a statement that names it runs on the one shard that
holds the state. The workload below goes through every interface that reads or
writes graph rows (the HTTP backend, GraphQL, an IaC apply, export, prune, delete), and
each statement it sent is parsed (sqlglot) and checked.
"""

import sqlglot
from sqlglot import exp

from app.catalog.scopes import create_scope
from app.graph.readback import export_state
from app.graph.retention import prune
from app.iac import service
from tests.helpers.graphql import gql
from tests.helpers.links import remote
from tests.helpers.states import resource, state

# The tables that grow with the states: distributed by state_id (with the kept blast-radius
# walks, migration 0010, and the links between states, 0015). Links are found by producer
# name too (app/graph/links.py): that lookup spans the consumers' states, each consumer's
# rows then joined by its state_id, as inventory spans every state.
GRAPH_TABLES = {
    "state_links",
    "output_lineage",
    "resources",
    "resource_dependencies",
    "outputs",
    "raw_state_chunks",
    "policy_violations",
    "blast_walks",
    "blast_walk_rows",
}

WORKLOAD_QUERY = """query($id: ID!) {
  states(first: 5) { edges { node { name
    currentVersion { serial resourceCount outputs { name value sources { path } }
    resources(first: 50, filter: {type: "aws_subnet"}) { totalCount edges { node { id address
      dependencies(first: 5) { totalCount edges { node { address } } }
      dependents(first: 5) { edges { node { address } } }
      blastRadius(direction: DEPENDENCIES, first: 5) {
        totalCount edges { node { depth path } } } } } }
    diff(against: 1) { added removed changed { address } } }
    version(serial: 1) { resources(first: 5) { edges { node { address } } } }
    versions(first: 5) { edges { node { serial } } }
    events(first: 5) { edges { node { action } } } } } }
  resources(first: 5, filter: {attributes: {cidr: "10.0.1.0/24"}}) { edges { node { address } } }
  byModule: resources(first: 5, filter: {module: "", mode: MANAGED}) { totalCount }
  types: inventory(groupBy: TYPE) { key count }
  modules: inventory(groupBy: MODULE) { key count }
  perState: inventory(groupBy: STATE) { key count }
  blastRadius(state: "team/net", address: "aws_vpc.main", maxDepth: 5) { totalCount
    edges { node { resource { address } } } }
  across: blastRadius(state: "team/net", address: "aws_vpc.main", crossStates: true) {
    totalCount edges { node { pathStates resource { address attributes } } } }
  back: blastRadius(state: "team/app", address: "aws_instance.web", direction: DEPENDENCIES,
                    crossStates: true) { totalCount }
  app: state(name: "team/app") { producers { address stale outputs { name } } }
  net: state(name: "team/net") { unreadOutputs consumers { consumer { name } }
    currentVersion { outputs { readers { address } } } }
  staleConsumers(state: "team/net") { address }
  statesGraph { links { consumer } }
  counted: blastRadius(state: "team/net", address: "aws_vpc.main", maxDepth: 4) { totalCount }
  node(id: $id) { ... on Resource { address dependents { totalCount } } }
  violations(open: null) { totalCount edges { node { resource { address } } } }
  ofState: violations(state: "team/net") { totalCount }
}"""
POLICY = """mutation { createPolicy(input: {name: "wide", resourceType: "aws_*",
  condition: "$.cidr == \\"10.0.1.0/24\\" || exists($.id)"}) { name } }"""


def _network(serial: int, subnets: int) -> bytes:
    return state(
        [
            resource("aws_vpc", "main", attributes={"id": "vpc-0123456789"}),
            resource(
                "aws_subnet",
                "a",
                keys=list(range(subnets)),
                attributes={"cidr": "10.0.1.0/24"},
                depends_on=["aws_vpc.main"],
            ),
        ],
        serial=serial,
        outputs={"vpc": {"value": "vpc-0123456789", "type": "string"}},
    )


def _app(serial: int) -> bytes:
    """Reads team/net's outputs (http://test is the app's own address in these tests)."""
    return state(
        [
            remote("net", "http://test/states/team/net", {"vpc": "vpc-0123456789"}),
            resource("aws_instance", "web", depends_on=["data.terraform_remote_state.net"]),
        ],
        serial=serial,
    )


def _unfiltered(sql: str) -> list[str]:
    """The graph tables of `sql` (by alias) that no `state_id = ...` condition names."""
    tree = sqlglot.parse_one(sql, read="postgres")
    if isinstance(tree, exp.Insert):
        columns = {c.name for c in tree.this.find_all(exp.Identifier)}
        return [] if "state_id" in columns else [tree.this.sql()]
    named = set()
    for eq in tree.find_all(exp.EQ):
        for side in (eq.left, eq.right):
            if isinstance(side, exp.Column) and side.name == "state_id":
                named.add(side.table)  # "" when unqualified
    missing = []
    for table in tree.find_all(exp.Table):
        if table.name in GRAPH_TABLES and not {table.alias_or_name, ""} & named:
            missing.append(f"{table.name} {table.alias_or_name}")
    return missing


def _graph_statements(statements: list[str]) -> list[str]:
    return [
        s
        for s in statements
        if any(t in s for t in GRAPH_TABLES) and not s.lstrip().upper().startswith("COPY")
    ]


async def test_every_graph_statement_names_the_state(client, conn, app, statements) -> None:
    headers = {"Content-Type": "application/json"}
    await gql(client, POLICY)  # each write evaluates it
    for serial, subnets in ((1, 2), (2, 3)):
        response = await client.post("/states/team/net", content=_network(serial, subnets))
        assert response.status_code == 200, response.text
        response = await client.post("/states/team/app", content=_app(serial))
        assert response.status_code == 200, response.text
    assert (await client.get("/states/team/net")).status_code == 200
    lock = b'{"ID": "l1", "Operation": "OperationTypeApply", "Who": "t"}'
    assert (await client.request("LOCK", "/states/team/net", content=lock)).status_code == 200
    assert (await client.request("UNLOCK", "/states/team/net", content=lock)).status_code == 200
    found = await gql(
        client,
        '{ resources(first: 1, filter: {state: "team/net", type: "aws_vpc"}) '
        "{ edges { node { id } } } }",
    )
    resource_id = found["resources"]["edges"][0]["node"]["id"]
    data = await gql(client, WORKLOAD_QUERY, {"id": resource_id})
    assert data["node"]
    # the walk across states went on into team/app
    assert data["across"]["totalCount"] == data["blastRadius"]["totalCount"] + 2
    async with app.state.pool.acquire() as logged:
        await export_state(logged, "team/net", serial=1, actor="test")
        pruned = await prune(logged, state_glob="team/*", keep_last=1, keep_days=None, actor="t")
        assert pruned[0].serials == [1]
        await create_scope(logged, "crm", "CRM")
        document = b'{"kind": "header", "system": "crm", "version": 1}\n' + (
            b'{"kind": "table", "ref": "t", "spec": {"name": "T"}}\n'
        )
        plan = await service.plan(logged, "crm", document)
        await service.apply(logged, "crm", document, plan.hash, actor="test")
    await gql(client, 'mutation { updatePolicy(input: {name: "wide", states: "team/*"}) { name } }')
    dashboard = [  # the dashboard's pages (app/dashboard)
        ("/", {}),
        ("/ui/state", {"name": "team/net", "from": "2", "to": "2"}),
        ("/ui/resource", {"state": "team/net", "address": "aws_vpc.main"}),
        ("/ui/inventory", {"q": '{"id": "vpc-1"}'}),
        ("/ui/iac", {}),
    ]
    for path, params in dashboard:
        page = await client.get(path, params=params, headers={"Accept": "text/html"})
        assert page.status_code == 200, page.text
    for name in ("team/net", "team/app"):
        response = await client.delete(f"/states/{name}", headers=headers)
        assert response.status_code == 200, response.text

    checked = _graph_statements(statements.statements)
    assert len(checked) >= 15  # the workload reached the graph tables through every path
    unfiltered = {s: missing for s in checked if (missing := _unfiltered(s))}
    assert not unfiltered, unfiltered


def test_the_check_catches_a_statement_without_the_state() -> None:
    assert _unfiltered("SELECT * FROM resources r WHERE r.id = $1") == ["resources r"]
    assert _unfiltered(
        "SELECT * FROM resources r JOIN outputs o ON o.name = r.address WHERE r.state_id = $1"
    ) == ["outputs o"]
    assert _unfiltered("UPDATE outputs SET serial_to = 1 WHERE state_id = $1") == []
    assert _unfiltered("DELETE FROM resource_dependencies WHERE state_id = $1") == []
