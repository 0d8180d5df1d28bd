"""Every benchmark case at tiny size, so the benchmark code cannot rot. Each case
checks that candidate and baseline did the same work (row counts, the same
blast-radius sets and pages); timings are not asserted."""

import os

import pytest

from bench.__main__ import run
from bench.cases import GROUPS, TINY
from tests.citus_cluster import CITUS_URL

# The citus group runs where a cluster is (CITUS_URL set): its cases compare it with a
# single node.
CITUS_CASES = {
    "citus, import",
    "citus, change",
    "citus, list",
    "citus, blast radius",
    "citus, cross-state radius",
}


@pytest.mark.slow
async def test_every_benchmark_case_runs_and_agrees_with_its_baseline(admin_url: str) -> None:
    cluster = bool(os.environ.get(CITUS_URL))
    results = await run(sorted(g for g in GROUPS if cluster or g != "citus"), TINY, admin_url)
    cases = {r.case for r in results}
    assert cases - CITUS_CASES == {
        "import",
        "import + GET, encrypted",
        "big import",
        "blast radius",
        "blast radius, whole",
        "blast radius, page",
        "list",
        "state GET",
        "locks",
        "plan",
        "change",
        "storage",
        "diff",
        "history",
        "policies, write",
        "policies, new",
        "dashboard overview",
        "dashboard resource",
        "dashboard states map",
        "cross-state blast radius",
        "cost model",
        "webhooks, queue",
        "webhooks, drain",
        "oidc, cached-key verify",
        "plan impact",
        "configuration modules",
        "leases, 8 jobs",
        "leases, merged write",
    }
    assert cases & CITUS_CASES == (CITUS_CASES if cluster else set())
    for result in results:
        assert result.candidate_s > 0
        # every case has a same-run baseline but the absolute goals (plan, diff, history, a
        # kept blast-radius page) and storage (sizes)
        absolute = (
            "plan",
            "storage",
            "diff",
            "history",
            "blast radius, page",
            "dashboard overview",
            "dashboard resource",
            "dashboard states map",
            "webhooks, drain",
        )
        assert (result.baseline_s is None) == (result.case in absolute)
