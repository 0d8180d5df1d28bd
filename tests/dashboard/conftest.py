"""An emptied database for the dashboard modules that run a live server (the in-process
app of the others: tests/conftest.py)."""

import asyncpg
import pytest

from tests.helpers.databases import truncate_all


@pytest.fixture(scope="module")
async def emptied(database_url: str) -> None:
    """The session's database without what earlier tests left."""
    conn = await asyncpg.connect(database_url)
    try:
        await truncate_all(conn)
    finally:
        await conn.close()
