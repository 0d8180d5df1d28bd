"""The dashboard shows what the token may read: a read token for `team/*` and scope
`crm` never sees `other/...` or scope `hr` on any page (lists, totals, events, search),
a page of such a state is 404 as for an absent one, and force-unlock is for admins."""

import re

import asyncpg
import pytest

from app.access import Principal, Role
from app.catalog.scopes import create_scope
from app.graph import locks
from app.graph.write.version import write_version
from tests.helpers.app import BOOT, as_token
from tests.helpers.dashboard import HTML, apply_tables, hub


@pytest.fixture
async def world(conn: asyncpg.Connection, db_token) -> str:
    """team/app and other/app, each written and locked; scopes crm and hr, each applied.
    Returns a read token for team/* and crm."""
    for side in ("team", "other"):
        await write_version(conn, f"{side}/app", hub(2), actor="ci")
        info = {"ID": f"lock-{side}", "Who": f"{side}@laptop", "Operation": "apply"}
        await locks.lock(conn, f"{side}/app", info, who=Principal("ci", Role.WRITE))
    for slug in ("crm", "hr"):
        await create_scope(conn, slug, slug.upper())
        await apply_tables(conn, slug, "sys", ["contacts"])
    return await db_token("dash", Role.READ, states=["team/*"], scopes=["crm"])


PAGES = (
    ("/", {}),
    ("/ui/state", {"name": "team/app"}),
    ("/ui/resource", {"state": "team/app", "address": "aws_vpc.main"}),
    ("/ui/inventory", {}),
    ("/ui/inventory", {"q": '{"id": "vpc-1"}'}),
    ("/ui/iac", {}),
)


async def test_a_read_token_sees_only_its_states_and_scopes(closed_app, world) -> None:
    async with as_token(closed_app, world, HTML) as client:
        for path, params in PAGES:
            response = await client.get(path, params=params)
            assert response.status_code == 200, (path, response.text)
            html = response.text
            assert "other/" not in html and "iac:hr/" not in html, path
            assert "team/app" in html or "iac:crm/" in html, path
        overview = (await client.get("/")).text
        # team/app and its scope's graph state iac:crm/sys
        assert re.search(r"<b>2</b> states.*<b>1</b> locked", overview, re.S)
        by_state = (await client.get("/ui/inventory")).text
        assert "team/app" in by_state and "iac:crm/sys" in by_state  # its scope's state
        for path, params in (
            ("/ui/state", {"name": "other/app"}),
            ("/ui/resource", {"state": "other/app", "address": "aws_vpc.main"}),
        ):
            hidden = await client.get(path, params=params)
            assert hidden.status_code == 404, path  # as for an absent one


async def test_force_unlock_shows_to_admins_only(closed_app, world) -> None:
    async with (
        as_token(closed_app, world, HTML) as reader,
        as_token(closed_app, BOOT, HTML) as admin,
    ):
        read_page = (await reader.get("/ui/state", params={"name": "team/app"})).text
        admin_page = (await admin.get("/ui/state", params={"name": "team/app"})).text
        overview = (await admin.get("/")).text
    assert "lock-team" in read_page and 'id="force-unlock"' not in read_page
    assert 'id="force-unlock"' in admin_page
    assert "other/app" in overview and re.search(
        r"<b>4</b> states.*<b>2</b> locked", overview, re.S
    )
