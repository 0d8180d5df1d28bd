"""The reads of resource rows in the workload of tests/citus (lists and search, blast
radius and its kept pages, the radius across states, diff, history, the dashboard's state
and resource pages), leases, configuration and Terraform plans (their impact across
states): each a function of the app's client that returns its answers as they are
(tests/helpers/citus_workload.py makes them comparable)."""

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from tests.helpers.configurations import network, network_state, plan_with
from tests.helpers.lease_plans import plan_doc, state_doc
from tests.helpers.plans import as_bytes, change, plan

Ask = Callable[[str, dict[str, Any] | None], Awaitable[Any]]

_ROW = "address type name module indexKey mode provider attributes sensitiveAttributes"
RESOURCES = f"""query($filter: ResourceFilter, $first: Int, $after: String) {{
  resources(filter: $filter, first: $first, after: $after) {{
    totalCount pageInfo {{ hasNextPage endCursor }}
    edges {{ node {{ {_ROW} state {{ name }} version {{ serial }} }} }} }} }}"""
RADIUS = """query($state: String!, $address: String!, $direction: Direction!, $first: Int,
               $after: String, $across: Boolean!, $depth: Int) {
  blastRadius(state: $state, address: $address, direction: $direction, first: $first,
              after: $after, crossStates: $across, maxDepth: $depth) {
    totalCount beyondCount truncated pageInfo { hasNextPage endCursor }
    edges { node { depth path pathStates resource { address state { name } } } } } }"""
DIFF = """query($name: String!, $serial: Int!, $against: Int!) { state(name: $name) {
  version(serial: $serial) { serial diff(against: $against) {
    against added removed changed { address changes { path old new sensitive } } } } } }"""
HISTORY = """query($filter: ResourceFilter) { resources(filter: $filter) { edges { node {
  address history(first: 10) { totalCount edges { node {
    serial change actor attributes { path old new sensitive } fields } } } } } } }"""
LEASES = """mutation($state: String!, $plan: JSON!) {
  acquireLease(state: $state, plan: $plan) { id holder baseSerial addresses outputs } }"""
CONFIGURATION = """{ state(name: "team/cfg") {
  modules { key name parent source versionConstraint expansion instances keys resourceCount }
  configurations { number origin } }
  modules(source: "terraform-aws-modules/s3-bucket/aws") { state key versionConstraint }
  references: resources(filter: {state: "team/cfg"}) { edges { node { address
    references { reason attributes direct resource { address } }
    referencedBy { reason attributes direct resource { address } } } } }
  radius: blastRadius(state: "team/cfg", address: "aws_vpc.main") {
    totalCount edges { node { depth resource { address } } } } }"""


async def resource_reads(ask: Ask) -> dict[str, Any]:
    """Lists with each filter, attribute search, and a list paged to its end."""
    filters: dict[str, dict[str, Any]] = {
        "all": {},
        "state": {"state": "team/net"},
        "type": {"type": "aws_subnet"},
        "provider": {"provider": 'provider["registry.terraform.io/hashicorp/aws"]'},
        "module": {"module": ""},
        "data": {"mode": "DATA"},
        "address": {"state": "team/net", "address": "aws_vpc.main"},
        "prefix": {"addressPrefix": "aws_instance."},
        "search": {"attributes": {"cidr": "10.0.1.0/24"}},
        "search in a state": {"state": "team/big", "attributes": {"cidr": "10.9.0.0/24"}},
    }
    answers: dict[str, Any] = {}
    for name, given in filters.items():
        answers[name] = await ask(RESOURCES, {"filter": given, "first": 50})
    pages = []
    after = None
    while True:
        page = (
            await ask(RESOURCES, {"filter": {"type": "aws_instance"}, "first": 2, "after": after})
        )["resources"]
        pages.append([e["node"]["address"] for e in page["edges"]])
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    answers["paged"] = pages
    return answers


async def radius_reads(ask: Ask) -> dict[str, Any]:
    """Blast radius: whole, first page and the kept pages after it, to a depth, both
    directions, and across states (first page, next page)."""
    answers: dict[str, Any] = {}
    cases: dict[str, dict[str, Any]] = {
        "whole": {"state": "team/net", "address": "aws_vpc.main"},
        "depth 1": {"state": "team/net", "address": "aws_vpc.main", "depth": 1},
        "dependencies": {
            "state": "team/net",
            "address": "aws_instance.web[1]",
            "direction": "DEPENDENCIES",
        },
        "across": {"state": "team/net", "address": "aws_vpc.main", "across": True},
        "across back": {
            "state": "team/app",
            "address": "aws_eip.app",
            "direction": "DEPENDENCIES",
            "across": True,
        },
        "big": {"state": "team/big", "address": "aws_vpc.main", "page": 150},
    }
    for name, given in cases.items():
        size = given.pop("page", 3)
        variables = {"direction": "DEPENDENTS", "across": False, "first": 100, **given}
        answers[name] = await ask(RADIUS, variables)
        # and page by page: the first page, then each kept page after it
        pages = []
        after = None
        while True:
            page = (await ask(RADIUS, {**variables, "first": size, "after": after}))["blastRadius"]
            pages.append(page)
            if not page["pageInfo"]["hasNextPage"] or len(pages) > 200:
                break
            after = page["pageInfo"]["endCursor"]
        answers[f"{name}, paged"] = pages
    return answers


async def version_reads(ask: Ask) -> dict[str, Any]:
    """Diffs of versions kept, a resource's history."""
    answers: dict[str, Any] = {}
    for serial, against in ((4, 3), (3, 1), (2, 1), (4, 1)):
        answers[f"diff {against}..{serial}"] = await ask(
            DIFF, {"name": "team/net", "serial": serial, "against": against}
        )
    for address in ("aws_subnet.a[0]", "aws_subnet.a[2]", "aws_vpc.main"):
        answers[f"history {address}"] = await ask(
            HISTORY, {"filter": {"state": "team/net", "address": address}}
        )
    return answers


_TIMING = re.compile(r"\d+(\.\d+)?\s*(ms|s|µs)\b|\b\d+ (second|minute|hour|day)s? ago\b")
_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_WHEN = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d[.\d]*)?( ?(Z|UTC|[+-]\d\d:?\d\d))?")
_CURSOR = re.compile(r"(after|cursor)=[A-Za-z0-9%_=-]+")


def page_text(html: str) -> str:
    """A dashboard page without what the clock or the database made up."""
    for pattern, by in ((_ID, "<id>"), (_WHEN, "<time>"), (_TIMING, "<t>"), (_CURSOR, r"\1=<c>")):
        html = pattern.sub(by, html)
    return html


async def dashboard_reads(client: httpx.AsyncClient) -> dict[str, Any]:
    """The state and resource pages (and their variants), as text without times and ids."""
    pages = [
        ("/ui/state", {"name": "team/net"}),
        ("/ui/state", {"name": "team/net", "from": "3", "to": "4"}),
        ("/ui/state", {"name": "team/net", "q": "subnet"}),
        ("/ui/state", {"name": "team/app"}),
        ("/ui/state", {"name": "team/cfg"}),
        ("/ui/resource", {"state": "team/net", "address": "aws_vpc.main"}),
        ("/ui/resource", {"state": "team/net", "address": "aws_vpc.main", "serial": "3"}),
        (
            "/ui/resource",
            {"state": "team/net", "address": "aws_instance.web[0]", "direction": "dependencies"},
        ),
        ("/ui/resource", {"state": "team/cfg", "address": "aws_vpc.main"}),
        ("/ui/resource", {"state": "team/big", "address": "aws_vpc.main", "depth": "1"}),
    ]
    answers: dict[str, Any] = {}
    for path, params in pages:
        page = await client.get(path, params=params, headers={"Accept": "text/html"})
        key = f"{path}?{'&'.join(f'{k}={v}' for k, v in params.items())}"
        answers[key] = {"status": page.status_code, "text": page_text(page.text)}
    return answers


LEASE_BASE = {"a": "a0", "b": "b0", "c": "c0"}


async def lease_reads(client: httpx.AsyncClient, ask: Ask) -> dict[str, Any]:
    """Two leases on one state: each acquired from a plan, a merged write under each, an
    overlapping one refused, both released."""
    answers: dict[str, Any] = {}
    url = "/states/team/leased"
    answers["base"] = (await client.post(url, content=state_doc(1, LEASE_BASE))).status_code
    first = await ask(LEASES, {"state": "team/leased", "plan": plan_doc(LEASE_BASE, {"a": "a1"})})
    second = await ask(LEASES, {"state": "team/leased", "plan": plan_doc(LEASE_BASE, {"b": "b1"})})
    answers["acquired"] = [first, second]
    refused = await client.post(
        "/graphql",
        json={
            "query": LEASES,
            "variables": {"state": "team/leased", "plan": plan_doc(LEASE_BASE, {"a": "a2"})},
        },
    )
    answers["overlap"] = [e["extensions"]["code"] for e in refused.json()["errors"]]
    ids = [first["acquireLease"]["id"], second["acquireLease"]["id"]]
    for n, (lease_id, values) in enumerate(zip(ids, ({"a": "a1"}, {"b": "b1"}), strict=True)):
        under = {"lease": lease_id}
        lock = json.dumps({"ID": f"tf-{n}", "Operation": "OperationTypeApply", "Who": "tf"})
        locked = await client.request("LOCK", f"{url}/lock", params=under, content=lock)
        snapshot = await client.get(url, params=under)
        written = await client.post(
            url, params={**under, "ID": f"tf-{n}"}, content=state_doc(2, {**LEASE_BASE, **values})
        )
        answers[f"write {values}"] = [
            locked.status_code,
            snapshot.status_code,
            written.status_code,
            written.json(),
        ]
    answers["state"] = await ask(
        """{ state(name: "team/leased") { leases { holder addresses writes }
             currentVersion { serial } } }""",
        None,
    )
    for lease_id in ids:
        answers[f"release {lease_id == ids[0]}"] = await ask(
            "mutation($id: ID!) { releaseLease(id: $id) { holder } }", {"id": lease_id}
        )
    answers["head"] = (await client.get(url)).json()
    answers["after"] = await ask('{ state(name: "team/leased") { leases { holder } } }', None)
    return answers


async def configuration_reads(client: httpx.AsyncClient, ask: Ask) -> dict[str, Any]:
    """A configuration pushed for a state (twice: kept once), its modules and references,
    and the radius that follows them."""
    answers: dict[str, Any] = {}
    written = await client.post("/states/team/cfg", content=network_state())
    answers["state"] = written.status_code
    for attempt in ("first", "again"):
        pushed = await client.post("/states/team/cfg/configurations", json=plan_with(network()))
        answers[f"push {attempt}"] = {"status": pushed.status_code, "body": pushed.json()}
    answers["reads"] = await ask(CONFIGURATION, None)
    written = await client.post("/states/team/cfg", content=network_state(serial=2))
    answers["state 2"] = written.status_code
    answers["reads 2"] = await ask(CONFIGURATION, None)
    return answers


PLAN = """mutation($state: String!, $plan: JSON!) { submitPlan(state: $state, plan: $plan) {
  state baseSerial stale summary { action count }
  impact { state address depth path pathStates via }
  cross: impact(crossStates: true) { state address depth path pathStates via }
  paged: impact(crossStates: true, first: 2) { address }
  staleConsumers { consumer address output before after }
  markdown } }"""


def net_plan(vpc_id: str) -> dict[str, Any]:
    """A plan of team/net (tests/citus_workload.py's network) replacing its VPC and
    updating a subnet: its impact reaches team/app, which reads the VPC's id."""
    vpc = {"id": vpc_id}
    subnet = {"id": "subnet-0", "cidr": "10.0.1.0/24"}
    return plan(
        [
            change("aws_vpc.main", ["delete", "create"], vpc, {"id": None}, unknown={"id": True}),
            change("aws_subnet.a[0]", ["update"], subnet, {**subnet, "cidr": "10.0.2.0/24"}),
            change("aws_instance.web[1]", ["no-op"], {"id": "i-1"}, {"id": "i-1"}),
        ],
        prior={"aws_vpc.main": vpc, "aws_subnet.a[0]": subnet},
        outputs={
            "vpc": {"actions": ["update"], "before": vpc_id, "after": None, "after_unknown": True}
        },
    )


async def plan_reads(client: httpx.AsyncClient, ask: Ask, vpc_id: str) -> dict[str, Any]:
    """Terraform plans of team/net: submitted (their impact within the state and across
    states, paged; stale consumers; the markdown), POSTed (the report, its impact walked
    beside the write), and read again."""
    answers: dict[str, Any] = {}
    answers["submitted"] = await ask(PLAN, {"state": "team/net", "plan": net_plan(vpc_id)})
    posted = await client.post("/states/team/net/plans", content=as_bytes(net_plan(vpc_id)))
    answers["posted"] = {"status": posted.status_code, "body": posted.json()}
    answers["read"] = await ask(
        """{ plans(state: "team/net", first: 2) { baseSerial
             impact(crossStates: true, first: 20) {
               state address depth path pathStates via } } }""",
        None,
    )
    return answers
