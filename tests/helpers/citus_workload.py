"""One workload through every interface, its answers made comparable: the same inputs
on a single node and on a Citus cluster must give equal answers (tests/citus).

Answers keep what the inputs decide and drop what each database makes up: row ids,
times, cursors that carry ids.
"""

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
from starlette.applications import Starlette

from tests.helpers import citus_reads
from tests.helpers.links import remote
from tests.helpers.states import resource, state

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[.\d]*(Z|[+-]\d\d:?\d\d)?")
# made up by the database or the clock: left out of the comparison
_MADE_UP = {
    "id",
    "createdAt",
    "updatedAt",
    "openedAt",
    "resolvedAt",
    "at",
    "endCursor",
    "cursor",
    "startCursor",
    "lastUsedAt",
    "expiresAt",
    "hash",
    "token",
}


def comparable(value: Any) -> Any:
    """`value` without what the database or the clock made up."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in _MADE_UP}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    if isinstance(value, str):
        return _TIME.sub("<time>", _UUID.sub("<uuid>", value))
    return value


def vpc(serial: int) -> str:
    """team/net's VPC id at `serial`, and its output `vpc` (long enough to trace)."""
    return f"vpc-0a1b2c{serial:04d}"


def network(serial: int, subnets: int) -> bytes:
    return state(
        [
            # its id is the output `vpc`: the output derives from it (lineage across states)
            resource("aws_vpc", "main", attributes={"id": vpc(serial)}),
            resource(
                "aws_subnet",
                "a",
                keys=list(range(subnets)),
                attributes={"cidr": "10.0.1.0/24"},
                depends_on=["aws_vpc.main"],
            ),
            resource("aws_instance", "web", keys=list(range(subnets)), depends_on=["aws_subnet.a"]),
        ],
        serial=serial,
        outputs={"vpc": {"value": vpc(serial), "type": "string"}},
    )


def consumer(serial: int, read: str) -> bytes:
    """Reads team/net's output `vpc` (http://test is the app's address in the tests)."""
    return state(
        [
            remote("net", "http://test/states/team/net", {"vpc": read}),
            resource("aws_instance", "app", depends_on=["data.terraform_remote_state.net"]),
            resource("aws_eip", "app", depends_on=["aws_instance.app"]),
        ],
        serial=serial,
    )


def big(serial: int, count: int) -> bytes:
    """A state past the large-write limit the tests set: streamed in."""
    return state(
        [
            resource("aws_vpc", "main", attributes={"id": "vpc-big"}),
            resource(
                "aws_subnet",
                "s",
                keys=list(range(count)),
                attributes={"cidr": "10.9.0.0/24", "pad": "x" * 200},
                depends_on=["aws_vpc.main"],
            ),
        ],
        serial=serial,
    )


# The reads the cluster answers today; resource rows (lists, search, blast radius, diff,
# history, output sources) are not among them yet (docs/scaling.md says why).
READS = """{
  states(first: 10) { totalCount edges { node { name kind lineage
    lock { who operation }
    currentVersion { serial resourceCount lineage terraformVersion createdBy
      outputs { name value sensitive } }
    version(serial: 1) { serial resourceCount }
    versions(first: 10) { totalCount edges { node { serial resourceCount } } }
    events(first: 20) { edges { node { action actor serial stateName } } }
    consumers { address stale consumer { name } outputs { name changed } }
    producers { address stale outputs { name } }
    unreadOutputs } } }
  types: inventory(groupBy: TYPE) { key count }
  modules: inventory(groupBy: MODULE) { key count }
  providers: inventory(groupBy: PROVIDER) { key count }
  perState: inventory(groupBy: STATE) { key count }
  staleConsumers(state: "team/net") { address stale consumer { name } }
  statesGraph { states { name } links { consumer producer } }
  violations(open: null) { totalCount edges { node { open policy { name }
    since { serial } resolved { serial } } } }
  ofState: violations(state: "team/net") { totalCount }
  policies(first: 10) { edges { node { name resourceType condition } } }
  events(first: 50) { edges { node { action actor serial stateName } } }
}"""

AFTER_PRUNE = """{ states(first: 5) { edges { node { name versions(first: 5) {
    edges { node { serial resourceCount } } } } } }
  violations(open: null) { totalCount } }"""


async def gql(
    client: httpx.AsyncClient, query: str, variables: dict[str, Any] | None = None
) -> Any:
    response = await client.post("/graphql", json={"query": query, "variables": variables or {}})
    assert response.status_code == 200, response.text
    body = response.json()
    assert "errors" not in body, body["errors"]
    return body["data"]


async def run(client: httpx.AsyncClient, app: Starlette) -> dict[str, Any]:
    """The workload on an empty database; its answers, comparable()."""
    answers: dict[str, Any] = {}

    async def keep(name: str, response: httpx.Response, *, body: bool = True) -> None:
        assert response.status_code < 500, response.text
        answers[name] = {"status": response.status_code}
        if body and response.content:
            try:
                answers[name]["body"] = response.json()
            except json.JSONDecodeError:
                answers[name]["body"] = response.text

    answers["policy"] = await gql(
        client,
        """mutation { createPolicy(input: {name: "subnets", resourceType: "aws_subnet",
             condition: "$.cidr == \\"10.0.1.0/24\\""}) { name } }""",
    )
    # the backend: LOCK, writes under the lock, UNLOCK; a consumer linked to the network
    lock = b'{"ID": "l1", "Operation": "OperationTypeApply", "Who": "ci"}'
    await keep("lock", await client.request("LOCK", "/states/team/net", content=lock))
    await keep("locked", await client.request("LOCK", "/states/team/net", content=lock))
    for serial, subnets in ((1, 2), (2, 3), (3, 3)):
        await keep(
            f"net {serial}",
            await client.post("/states/team/net?ID=l1", content=network(serial, subnets)),
        )
    await keep("unlock", await client.request("UNLOCK", "/states/team/net", content=lock))
    await keep("app 1", await client.post("/states/team/app", content=consumer(1, vpc(2))))
    await keep("app 2", await client.post("/states/team/app", content=consumer(2, vpc(3))))
    await keep("net 4", await client.post("/states/team/net", content=network(4, 2)))
    # the streamed large write (no Content-Length: a chunked body)
    document = big(1, 400)

    async def chunks() -> AsyncIterator[bytes]:
        for at in range(0, len(document), 16_384):
            yield document[at : at + 16_384]

    await keep("big", await client.post("/states/team/big", content=chunks()))
    get = await client.get("/states/team/net")
    answers["GET"] = {"status": get.status_code, "body": get.json()}
    big_get = await client.get("/states/team/big")
    assert big_get.content == document
    answers["GET big"] = len(big_get.content)
    answers["reads"] = await gql(client, READS)
    answers.update(await resource_rows(client))
    # the dashboard's pages
    dashboard = [
        ("/", {}),
        ("/ui/inventory", {}),
        ("/ui/iac", {}),
    ]
    for path, params in dashboard:
        page = await client.get(path, params=params, headers={"Accept": "text/html"})
        assert page.status_code == 200, page.text
        answers[f"dashboard {path}"] = _UUID.sub("<uuid>", _TIME.sub("<time>", page.text)).count(
            "team/"
        )
    # IaC plan and apply: a graph state of its own
    await gql(client, 'mutation { createScope(slug: "crm", name: "CRM") { slug } }')
    iac = (
        '{"kind": "header", "system": "crm", "version": 1}\n'
        '{"kind": "table", "ref": "t", "spec": {"name": "T"}}\n'
    )
    plan = await gql(
        client,
        'mutation($d: String!) { plan(scope: "crm", document: $d) { hash summary { create } } }',
        {"d": iac},
    )
    answers["iac plan"] = plan["plan"]["summary"]
    applied = await gql(
        client,
        """mutation($d: String!, $h: String!) { apply(scope: "crm", document: $d, hash: $h) {
             stateName summary { create } } }""",
        {"d": iac, "h": plan["plan"]["hash"]},
    )
    answers["iac apply"] = applied["apply"]
    answers["iac state"] = await gql(
        client, '{ state(name: "iac:crm/crm") { currentVersion { serial resourceCount } } }'
    )
    # tokens: made, used, revoked
    made = await gql(
        client,
        'mutation { createToken(name: "reader", role: READ) { token { name role } secret } }',
    )
    secret = made["createToken"]["secret"]
    answers["token"] = made["createToken"]["token"]
    reader = await client.get("/states/team/app", auth=("reader", secret))
    answers["token read"] = reader.status_code
    answers["revoke"] = await _revoke(client, secret)
    # retention and deletion
    answers["prune"] = await gql(
        client,
        """mutation { prune(states: "team/*", keepLast: 2) {
             state serials resources edges outputs chunks } }""",
    )
    answers["after prune"] = await gql(client, AFTER_PRUNE)
    await keep("delete", await client.delete("/states/team/big"))
    answers["after delete"] = await gql(client, "{ states { totalCount edges { node { name } } } }")
    return comparable(answers)


async def resource_rows(client: httpx.AsyncClient) -> dict[str, Any]:
    """The reads of resource rows (tests/helpers/citus_reads.py), with the states they need."""

    async def ask(query: str, variables: dict[str, Any] | None) -> Any:
        return await gql(client, query, variables)

    return {
        "configuration": await citus_reads.configuration_reads(client, ask),
        "leases": await citus_reads.lease_reads(client, ask),
        "resources": await citus_reads.resource_reads(ask),
        "radius": await citus_reads.radius_reads(ask),
        "versions": await citus_reads.version_reads(ask),
        "dashboard": await citus_reads.dashboard_reads(client),
        "plans": await citus_reads.plan_reads(client, ask, vpc(4)),
    }


async def _revoke(client: httpx.AsyncClient, secret: str) -> Any:
    """The reader token revoked by the admin (the bootstrap one), then refused."""
    revoked = await gql(client, 'mutation { revokeToken(name: "reader") { name } }')
    refused = await client.get("/states/team/app", auth=("reader", secret))
    return {"revoked": revoked, "then": refused.status_code}
