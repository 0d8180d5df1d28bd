"""A single node with history becomes a Citus database (the steps of docs/scaling.md:
the extension, the nodes, `infragraph migrate`) and answers as it did; migrate then has
nothing left to do."""

import asyncpg
import pytest

from app import citus, db
from tests.helpers.citus_cluster import citus_url, cluster_database, join_cluster, serving
from tests.helpers.citus_workload import READS, comparable, gql, network, run

pytestmark = [pytest.mark.citus, pytest.mark.slow]


async def test_a_single_node_with_history_converts() -> None:
    url = citus_url()
    async with cluster_database(url, extension=False) as database:
        async with serving(database) as (app, client):
            await run(client, app)  # versions, links, violations, a prune, a delete
            before = comparable(await gql(client, READS))
        await join_cluster(database, url)
        conn = await asyncpg.connect(database)
        try:
            steps = await db.migrate(conn)
            assert "resources: distributed by state_id, co-located with state_versions" in steps
            assert "states: reference table" in steps
            expected = citus.layout(await citus.tables(conn))
            assert await citus.current_placement(conn) == expected
            assert await db.migrate(conn) == []  # all done: nothing more
        finally:
            await conn.close()
        async with serving(database) as (app, client):
            assert comparable(await gql(client, READS)) == before
            # and it goes on: a new version of a converted state
            response = await client.post("/states/team/net", content=network(5, 3))
            assert response.status_code == 200, response.text
            data = await gql(client, '{ state(name: "team/net") { currentVersion { serial } } }')
            assert data["state"]["currentVersion"]["serial"] == 5
