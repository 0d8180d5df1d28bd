"""A Citus database whose edges were stored instance to instance (before migration 0030)
takes the migration on its distributed tables: every version reads as it did, and the
current edges are at the grain they are declared."""

import pytest

from app import citus, db
from app.graph.write import version as write_version_module
from app.graph.write.version import write_version
from tests.helpers.citus_cluster import distributed_until
from tests.helpers.edges import history, instance_edges, old_edges, old_writer
from tests.helpers.fan_in import fan_in_state

pytestmark = [pytest.mark.citus, pytest.mark.slow]


async def test_edges_stored_instance_to_instance_convert_on_the_cluster(monkeypatch) -> None:
    async with distributed_until(29) as conn:
        monkeypatch.setattr(write_version_module, "write_edges", old_writer)
        for body in history():
            await write_version(conn, "old", body, actor="test")
        await write_version(conn, "old-fan", fan_in_state(40, 30), actor="test")
        expected = {s: await old_edges(conn, "old", s) for s in (1, 2)}
        monkeypatch.undo()
        assert "0030_edge_grain.sql" in await db.migrate(conn)
        after = {s: await instance_edges(conn, "old", s) for s in (1, 2)}
        assert after == expected
        rows = await conn.fetchval(
            """SELECT count(*) FROM resource_dependencies d
               JOIN states s ON s.id = d.state_id WHERE s.name = 'old-fan'"""
        )
        assert rows == 30 + 40  # were 1,200
        assert len(await instance_edges(conn, "old-fan")) == 40 * 30
        assert await citus.current_placement(conn) == citus.layout(await citus.tables(conn))
