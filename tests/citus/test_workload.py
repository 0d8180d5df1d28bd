"""The same workload on a single node and on a Citus cluster gives the same answers."""

import pytest

from tests.helpers.citus_cluster import citus_url, cluster_database, serving
from tests.helpers.citus_workload import run
from tests.helpers.databases import throwaway_database

pytestmark = [pytest.mark.citus, pytest.mark.slow]


async def test_the_cluster_answers_as_a_single_node(admin_url: str) -> None:
    url = citus_url()
    async with throwaway_database(admin_url) as single, serving(single) as (app, client):
        alone = await run(client, app)
    # the workload reached what it compares: links, a stale consumer, violations, a prune
    assert alone["reads"]["staleConsumers"] and alone["reads"]["violations"]["totalCount"]
    assert alone["prune"]["prune"][0]["serials"]
    # and the reads of resource rows: lists, the radius across states (into team/app and
    # back), kept pages, diffs with changes, histories, the dashboard, merged leases
    rows = alone["resources"]
    assert rows["all"]["resources"]["totalCount"] > 400 and len(rows["paged"]) == 2
    across = alone["radius"]["across"]["blastRadius"]["edges"]
    assert {e["node"]["resource"]["state"]["name"] for e in across} == {"team/net", "team/app"}
    back = alone["radius"]["across back"]["blastRadius"]["edges"]
    assert back[-1]["node"]["pathStates"][-1] == "team/net"
    assert len(alone["radius"]["big, paged"]) > 1
    assert alone["versions"]["diff 3..4"]["state"]["version"]["diff"]["changed"]
    assert all(page["status"] == 200 for page in alone["dashboard"].values())
    assert alone["leases"]["state"]["state"]["currentVersion"]["serial"] == 3
    assert alone["configuration"]["reads"]["state"]["modules"]
    # a plan's impact across states reaches team/app, on its own page and in its report
    plans = alone["plans"]
    impact = plans["submitted"]["submitPlan"]["cross"]
    assert {m["state"] for m in impact} == {"team/net", "team/app"} and len(impact) > 4
    assert len(plans["submitted"]["submitPlan"]["paged"]) == 2
    assert plans["posted"]["status"] == 201 and plans["read"]["plans"][0]["impact"] == impact
    async with cluster_database(url) as sharded, serving(sharded) as (app, client):
        clustered = await run(client, app)
    assert clustered == alone
