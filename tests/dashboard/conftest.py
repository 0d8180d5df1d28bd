"""The app in-process (tests/api's fixtures) for the dashboard's pages, and an emptied
database for the modules that run a live server."""

import asyncpg
import pytest

from tests.api.conftest import app, client, closed_app, db_token, statements
from tests.conftest import truncate_all

__all__ = ["app", "client", "closed_app", "db_token", "statements"]


@pytest.fixture(scope="module")
async def emptied(database_url: str) -> None:
    """The session's database without what earlier tests left."""
    conn = await asyncpg.connect(database_url)
    try:
        await truncate_all(conn)
    finally:
        await conn.close()
