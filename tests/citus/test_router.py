"""On the cluster, each statement the server sends for one state's backend flows (a
write, a one-change write, a read, a lock and its release, a plan's lock and its
release) and for the reads of one state's resources (lists, search, blast radius walked
and paged, history, diff, the dashboard's resource page) runs on one shard: EXPLAIN
shows one task (a router plan), for each step of a statement Citus splits. Walks across
states (the radius, a plan's impact) walk each state in one statement on its shard."""

import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from tests.helpers.citus_cluster import citus_url, cluster_database, serving
from tests.helpers.citus_reads import net_plan
from tests.helpers.citus_workload import consumer, gql, network, vpc

pytestmark = [pytest.mark.citus, pytest.mark.slow]

_TASKS = re.compile(r"Task Count: (\d+)")
_DISTRIBUTED = (
    "state_versions",
    "resources",
    "resource_dependencies",
    "outputs",
    "raw_state_chunks",
    "state_locks",
    "state_plan_locks",
    "leases",
    "policy_violations",
    "state_links",
    "output_lineage",
    "blast_walks",
    "blast_walk_rows",
    "configured_versions",
    "configured_edges",
)


# What a one-state write asks of other states, by design (docs/scaling.md): the
# consumers of a producer whose outputs changed (links are found by producer name).
FANS_OUT = {"consumers of a producer": "l.producer_name = ANY($2::text[])"}


def task_counts(plan: str) -> list[int]:
    """The number of tasks of each distributed step of an EXPLAIN (Citus Adaptive)."""
    return [int(n) for n in _TASKS.findall(plan)]


def test_task_counts_reads_citus_plans() -> None:
    plan = """Custom Scan (Citus Adaptive)
  Task Count: 1
  ->  Distributed Subplan 3_1
        ->  Custom Scan (Citus Adaptive)
              Task Count: 32"""
    assert task_counts(plan) == [1, 32]


SKIPPED = ("COPY", "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "SELECT PG_ADVISORY")


async def _plans(pool: Any, sent: list[tuple[str, tuple[object, ...]]]) -> dict[str, list[int]]:
    """Each statement sent to a graph table, with its EXPLAIN's task counts."""
    checked = {}
    async with pool.acquire() as conn:
        for query, args in sent:
            text = " ".join(query.split())
            if text.upper().startswith(SKIPPED):
                continue
            if not any(re.search(rf"\b{t}\b", text) for t in _DISTRIBUTED):
                continue
            async with conn.transaction():  # EXPLAIN of a write plans it only
                # planned with the values sent (a generic plan prunes no shard)
                await conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
                plan = "\n".join(r[0] for r in await conn.fetch(f"EXPLAIN {query}", *args))
                checked[text] = task_counts(plan)
    return checked


@contextlib.asynccontextmanager
async def logged(pool: Any) -> AsyncIterator[list[tuple[str, tuple[object, ...]]]]:
    """The statements the app sends meanwhile (on the pool's connections: a few are
    taken at once, so the requests find them idle)."""
    sent: list[tuple[str, tuple[object, ...]]] = []
    active = [True]

    def log(query: asyncpg.connection.LoggedQuery) -> None:
        if active[0]:
            sent.append((query.query, tuple(query.args)))

    async with contextlib.AsyncExitStack() as taken:
        for _ in range(4):
            conn = await taken.enter_async_context(pool.acquire())
            conn.add_query_logger(log)
    try:
        yield sent
    finally:
        active[0] = False


def _elsewhere(checked: dict[str, list[int]], expected: dict[str, str]) -> dict[str, list[int]]:
    routed_elsewhere = {q: n for q, n in checked.items() if any(c != 1 for c in n)}
    return {q: n for q, n in routed_elsewhere.items() if not any(m in q for m in expected.values())}


async def test_one_state_flows_run_on_one_shard() -> None:
    url = citus_url()
    async with cluster_database(url) as database, serving(database) as (app, client):
        assert (await client.post("/states/team/net", content=network(1, 3))).status_code == 200
        pool = app.state.pool
        lock = b'{"ID": "l1", "Operation": "OperationTypeApply", "Who": "ci"}'
        plan = b'{"ID": "p1", "Operation": "OperationTypePlan", "Who": "ci"}'
        flows = [
            ("LOCK", "/states/team/net", lock),
            ("POST", "/states/team/net?ID=l1", network(2, 4)),  # one change: a subnet more
            ("GET", "/states/team/net", None),
            ("UNLOCK", "/states/team/net", lock),
            ("LOCK", "/states/team/net", plan),  # a plan's shared lock, and its release
            ("UNLOCK", "/states/team/net", plan),
        ]
        async with logged(pool) as sent:
            for method, path, body in flows:
                response = await client.request(method, path, content=body)
                assert response.status_code == 200, response.text
        checked = await _plans(pool, sent)
    assert len(checked) >= 5  # the flows reached the graph tables
    unexpected = _elsewhere(checked, FANS_OUT)
    assert not unexpected, unexpected


# What reads of one state ask of the others, by design (docs/scaling.md): dropping the
# kept walks past their limits, oldest first across states (once a walk is kept).
READS_FAN_OUT = {"kept walks past their limits": "sum(w.size) OVER (ORDER BY w.id DESC)"}
ONE_STATE_READS = [
    """{ resources(filter: {state: "team/net"}, first: 50) { totalCount
         edges { node { address attributes sensitiveAttributes
           dependencies { edges { node { address } } }
           history(first: 5) { edges { node { serial change } } } } } } }""",
    """{ resources(filter: {state: "team/net", attributes: {cidr: "10.0.1.0/24"}}) {
         totalCount } }""",
    """{ blastRadius(state: "team/net", address: "aws_vpc.main", first: 2) { totalCount
         pageInfo { endCursor } edges { node { depth path resource { address } } } } }""",
    """{ state(name: "team/net") { version(serial: 2) { diff(against: 1) {
         added removed changed { address } } } } }""",
]


async def test_one_state_reads_run_on_one_shard() -> None:
    """Resources of a state (with their edges and history), attribute search in it, a
    blast radius (walked and kept, then a kept page), a diff, the dashboard's resource
    page: each statement on one shard, but the kept walks' expiry."""
    url = citus_url()
    async with cluster_database(url) as database, serving(database) as (app, client):
        for serial, subnets in ((1, 3), (2, 4)):
            written = await client.post("/states/team/net", content=network(serial, subnets))
            assert written.status_code == 200, written.text
        pool = app.state.pool
        async with logged(pool) as sent:
            answers = [await gql(client, query) for query in ONE_STATE_READS]
            cursor = answers[2]["blastRadius"]["pageInfo"]["endCursor"]
            kept = await gql(
                client,
                """query($after: String) { blastRadius(state: "team/net",
                     address: "aws_vpc.main", first: 2, after: $after) {
                     edges { node { resource { address } } } } }""",
                {"after": cursor},
            )
            page = await client.get(
                "/ui/resource",
                params={"state": "team/net", "address": "aws_vpc.main"},
                headers={"Accept": "text/html"},
            )
            assert page.status_code == 200
        checked = await _plans(pool, sent)
    assert answers[0]["resources"]["totalCount"] == 9
    assert answers[2]["blastRadius"]["totalCount"] == 8 and kept["blastRadius"]["edges"]
    assert answers[3]["state"]["version"]["diff"]["added"]
    walks = [q for q in checked if "WITH RECURSIVE" in q]
    assert walks and all(checked[q] == [1] for q in walks)  # the walk, on one shard
    assert len(checked) >= 10
    unexpected = _elsewhere(checked, READS_FAN_OUT)
    assert not unexpected, unexpected


async def test_walks_across_states_run_a_state_at_a_time() -> None:
    """The radius across states and a plan's impact: each state's walk one statement on
    its shard (team/net's, then team/app's, reading its VPC's id)."""
    url = citus_url()
    async with cluster_database(url) as database, serving(database) as (app, client):
        for path, body in (
            ("/states/team/net", network(1, 2)),
            ("/states/team/app", consumer(1, vpc(1))),
        ):
            assert (await client.post(path, content=body)).status_code == 200
        async with logged(app.state.pool) as sent:
            radius = await gql(
                client,
                """{ blastRadius(state: "team/net", address: "aws_vpc.main",
                     crossStates: true) { totalCount } }""",
            )
            submitted = await gql(
                client,
                """mutation($plan: JSON!) { submitPlan(state: "team/net", plan: $plan) {
                     impact(crossStates: true) { state address } } }""",
                {"plan": net_plan(vpc(1))},
            )
        checked = await _plans(app.state.pool, sent)
    assert radius["blastRadius"]["totalCount"] == 7  # 2 subnets, 2 instances; 3 in team/app
    impact = submitted["submitPlan"]["impact"]
    assert {m["state"] for m in impact} == {"team/net", "team/app"}
    walks = {q: n for q, n in checked.items() if "WITH RECURSIVE" in q}
    assert walks and all(n == [1] for n in walks.values())
