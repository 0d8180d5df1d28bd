"""The same workload on a single node and on a Citus cluster gives the same answers."""

import pytest

from tests.citus_cluster import citus_url, cluster_database, serving
from tests.citus_workload import run
from tests.conftest import throwaway_database

pytestmark = [pytest.mark.citus, pytest.mark.slow]


async def test_the_cluster_answers_as_a_single_node(admin_url: str) -> None:
    url = citus_url()
    async with throwaway_database(admin_url) as single, serving(single) as (app, client):
        alone = await run(client, app)
    # the workload reached what it compares: links, a stale consumer, violations, a prune
    assert alone["reads"]["staleConsumers"] and alone["reads"]["violations"]["totalCount"]
    assert alone["prune"]["prune"][0]["serials"]
    async with cluster_database(url) as sharded, serving(sharded) as (app, client):
        clustered = await run(client, app)
    assert clustered == alone
