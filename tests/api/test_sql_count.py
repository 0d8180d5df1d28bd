"""The number of SQL statements a query runs does not grow with the items it returns
(pinned per operation, the way saleor does)."""

from app.configuration.parse import parse_configuration
from app.configuration.store import record_configuration
from app.graph.events import append_event
from app.graph.write.version import write_version
from app.webhooks.kinds import EventKind
from app.webhooks.store import create_webhook
from tests.helpers.backend import lock_info
from tests.helpers.configurations import call, config_resource, configuration, module, refs
from tests.helpers.graphql import gql
from tests.helpers.states import resource, state

LIST = """query($first: Int!) {
  resources(first: $first, filter: {state: "big"}) {
    totalCount
    edges { node {
      address
      state { name kind }
      version { serial }
      dependencies(first: 10) { totalCount edges { node { address } } }
      dependents(first: 10) { totalCount edges { node { address state { name } } } }
    } }
  }
}"""

DEEP = """query($first: Int!) {
  states(first: 3) { edges { node {
    name lock { id }
    currentVersion { serial resourceCount outputs { name }
      resources(first: $first, filter: {type: "aws_instance"}) { edges { node {
        address
        blastRadius(maxDepth: 3) { totalCount edges { node { depth path resource { address } } } }
        dependents { edges { node { dependencies { totalCount } } } }
      } } }
    }
    versions { edges { node { serial diff(against: 1) { added } } } }
    events(first: 2) { edges { node { action } } }
  } } }
}"""


def _web(count: int, serial: int = 1, *, eips: bool = False) -> bytes:
    """`count` instances, each depending on a VPC and on a shared security group
    (with `eips`: and as many addresses, each depending on all the instances)."""
    return state(
        [
            resource("aws_vpc", "main"),
            resource("aws_security_group", "sg", depends_on=["aws_vpc.main"]),
            resource(
                "aws_instance",
                "web",
                keys=list(range(count)),
                depends_on=["aws_vpc.main", "aws_security_group.sg"],
            ),
            *[resource("aws_eip", "ip", keys=list(range(count)), depends_on=["aws_instance.web"])]
            * eips,
        ],
        serial=serial,
    )


async def _count(client, statements, query: str, first: int) -> int:
    statements.statements.clear()
    data = await gql(client, query, {"first": first})
    assert data
    return len(statements.statements)


async def test_listing_500_resources_runs_as_many_statements_as_listing_5(
    client, conn, statements
) -> None:
    await write_version(conn, "big", _web(498), actor="test")
    data = await gql(client, LIST, {"first": 500})
    edges = data["resources"]["edges"]
    assert len(edges) == 500
    vpc = next(e["node"] for e in edges if e["node"]["address"] == "aws_vpc.main")
    assert vpc["dependents"]["totalCount"] == 499 and len(vpc["dependents"]["edges"]) == 10
    # one statement for the page, one per nested list; state and version come with the rows
    assert await _count(client, statements, LIST, 5) == 3
    assert await _count(client, statements, LIST, 500) == 3


async def test_a_deep_query_runs_a_fixed_number_of_statements(client, conn, statements) -> None:
    for name in ("a", "b", "c"):
        await write_version(conn, name, _web(3, eips=True), actor="test")
        await write_version(conn, name, _web(12, serial=2, eips=True), actor="test")
    # states, lock, currentVersion, resourceCount, outputs, resources, blastRadius,
    # dependents, their dependencies, versions, diff, events: 12; and the first time, the
    # blast radius walks are kept in one transaction for them all (BEGIN, lock, walk, page,
    # expire, COMMIT)
    assert await _count(client, statements, DEEP, 1) == 12 + 6
    assert await _count(client, statements, DEEP, 12) == 12 + 6  # 11 roots more
    assert await _count(client, statements, DEEP, 12) == 12  # their walks kept


WEBHOOKS = (
    "query { webhooks { url deliveries(first: 1) { totalCount edges { node { status } } } } }"
)


async def test_webhooks_with_their_deliveries_run_two_statements(client, conn, statements) -> None:
    async def webhooks(count: int) -> int:
        for n in range(count):
            await create_webhook(
                conn,
                url=f"https://192.0.2.{n + 1}/",  # refused before any connection
                kinds=[EventKind.STATE_WRITTEN],
                states=None,
                secret="sixteen-characters",
                form="json",
                created_by="test",
            )
        await append_event(conn, state_name="hooked", action="write", actor="test")
        statements.statements.clear()
        data = await gql(client, WEBHOOKS)
        assert all(h["deliveries"]["edges"] for h in data["webhooks"])
        return len(statements.statements)

    assert await webhooks(1) == 2  # the webhooks, and the page of each
    assert await webhooks(3) == 2  # four now


CONFIGURED = """query($first: Int!) {
  states(first: 3) { edges { node {
    modules { key source instances }
    configurations { number variables { name } }
    currentVersion { resources(first: $first, filter: {type: "aws_instance"}) { edges { node {
      references { reason attributes resource { address } }
      referencedBy { reason resource { address } }
    } } } }
  } } }
  modules(source: "./box") { state key resourceCount }
}"""


async def test_the_configuration_graph_runs_a_fixed_number_of_statements(
    client, conn, statements
) -> None:
    box = {"resources": [config_resource("aws_eip.ip")]}
    root = module(
        [
            config_resource("aws_vpc.main"),
            config_resource("aws_security_group.sg", {"vpc_id": refs("aws_vpc.main.id")}),
            config_resource(
                "aws_instance.web",
                {"vpc_id": refs("aws_vpc.main.id"), "sg": refs("aws_security_group.sg.id")},
            ),
        ],
        calls={"box": call("./box", box)},
    )
    for name in ("a", "b", "c"):
        await write_version(conn, name, _web(12), actor="test")
        await record_configuration(
            conn, name, parse_configuration(configuration(root)), origin="push", submitter="t"
        )
    # states, modules, configurations, currentVersion, resources, references,
    # referencedBy, their resources (one load), and the root modules: 9
    assert await _count(client, statements, CONFIGURED, 1) == 9
    assert await _count(client, statements, CONFIGURED, 12) == 9


async def test_a_lock_runs_two_statements_and_an_unlock_one(client, conn, statements) -> None:
    """A whole-state LOCK: the lock taken, then the live leases looked at; an UNLOCK,
    of a plan's shared lock or of the writer's: one statement."""
    url = "/states/locked"
    writer = lock_info("apply-1")
    plan = {**lock_info("plan-1"), "Operation": "OperationTypePlan"}
    assert (await client.request("LOCK", url, json=plan)).is_success  # makes the state

    async def statements_of(method: str, info: dict[str, str]) -> int:
        statements.statements.clear()
        response = await client.request(method, url, json=info)
        assert response.is_success, response.text
        return len(statements.statements)

    assert await statements_of("LOCK", writer) == 2
    assert await statements_of("UNLOCK", plan) == 1
    assert await statements_of("UNLOCK", writer) == 1
    assert await conn.fetchval("SELECT count(*) FROM state_locks") == 0
    assert await conn.fetchval("SELECT count(*) FROM state_plan_locks") == 0
