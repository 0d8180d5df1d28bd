"""Webhook tests run servers on a database of their own: the session's in-process apps
(tests/api/conftest.py) run delivery workers too, with settings that refuse loopback
receivers, and would take these tests' deliveries."""

from collections.abc import AsyncIterator

import pytest

from tests.conftest import throwaway_database


@pytest.fixture(scope="module")
async def own_database(admin_url: str) -> AsyncIterator[str]:
    async with throwaway_database(admin_url) as url:
        yield url
