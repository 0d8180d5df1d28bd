"""On the cluster, each statement the server sends for one state's backend flows (a
write, a one-change write, a read, a lock and its release) runs on one shard: EXPLAIN shows
one task (a router plan), for each step of a statement Citus splits."""

import re

import asyncpg
import pytest

from tests.citus_cluster import citus_url, cluster_database, serving
from tests.citus_workload import network

pytestmark = [pytest.mark.citus, pytest.mark.slow]

_TASKS = re.compile(r"Task Count: (\d+)")
_DISTRIBUTED = (
    "state_versions",
    "resources",
    "resource_dependencies",
    "outputs",
    "raw_state_chunks",
    "state_locks",
    "policy_violations",
    "state_links",
    "output_lineage",
    "blast_walks",
    "blast_walk_rows",
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


async def test_one_state_flows_run_on_one_shard() -> None:
    url = citus_url()
    sent: list[tuple[str, tuple[object, ...]]] = []

    def log(query: asyncpg.connection.LoggedQuery) -> None:
        sent.append((query.query, tuple(query.args)))

    async with cluster_database(url) as database, serving(database) as (app, client):
        assert (await client.post("/states/team/net", content=network(1, 3))).status_code == 200
        pool = app.state.pool
        async with pool.acquire() as conn:
            conn.add_query_logger(log)
        lock = b'{"ID": "l1", "Operation": "OperationTypeApply", "Who": "ci"}'
        flows = [
            ("LOCK", "/states/team/net", lock),
            ("POST", "/states/team/net?ID=l1", network(2, 4)),  # one change: a subnet more
            ("GET", "/states/team/net", None),
            ("UNLOCK", "/states/team/net", lock),
        ]
        for method, path, body in flows:
            response = await client.request(method, path, content=body)
            assert response.status_code == 200, response.text
        async with pool.acquire() as conn:
            conn.remove_query_logger(log)
        checked = {}
        async with pool.acquire() as conn:
            for query, args in sent:
                text = " ".join(query.split())
                if text.upper().startswith(
                    (
                        "COPY",
                        "BEGIN",
                        "COMMIT",
                        "ROLLBACK",
                        "SAVEPOINT",
                        "RELEASE",
                        "SELECT PG_ADVISORY",
                    )
                ):
                    continue
                if not any(re.search(rf"\b{t}\b", text) for t in _DISTRIBUTED):
                    continue
                async with conn.transaction():  # EXPLAIN of a write plans it only
                    # planned with the values sent (a generic plan prunes no shard)
                    await conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
                    plan = "\n".join(r[0] for r in await conn.fetch(f"EXPLAIN {query}", *args))
                    checked[text] = task_counts(plan)
    assert len(checked) >= 5  # the flows reached the graph tables
    routed_elsewhere = {q: n for q, n in checked.items() if any(c != 1 for c in n)}
    unexpected = {
        q: n for q, n in routed_elsewhere.items() if not any(m in q for m in FANS_OUT.values())
    }
    assert not unexpected, unexpected
