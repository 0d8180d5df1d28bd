"""A Citus database whose configured copies were made instance to instance (before
migration 0031) takes the migration on its distributed tables: the copies are at the
grain of the declared edges and every configured read is as it was."""

import pytest

from app import citus, db
from tests.helpers.citus_cluster import distributed_until
from tests.helpers.configured import check_converted, write_old_copies

pytestmark = [pytest.mark.citus, pytest.mark.slow]


async def test_configured_copies_convert_on_the_cluster(monkeypatch) -> None:
    async with distributed_until(30) as conn:
        before = await write_old_copies(conn, monkeypatch)
        assert "0031_configured_grain.sql" in await db.migrate(conn)
        await check_converted(conn, before)
        assert await citus.current_placement(conn) == citus.layout(await citus.tables(conn))
