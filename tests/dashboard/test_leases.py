"""The state page shows the plans reading a state and its live leases."""

import asyncpg
import httpx

from app.access import Principal, Role
from app.graph.write.version import write_version
from app.leases import shared, store
from app.plans.parse import parse_plan
from tests.helpers.lease_plans import address, plan_doc, state_doc

HTML = {"Accept": "text/html,application/xhtml+xml"}
BASE = {"a": "a0", "b": "b0"}


async def test_the_state_page_lists_plan_locks_and_leases(
    client: httpx.AsyncClient, conn: asyncpg.Connection
) -> None:
    await write_version(conn, "team/leased", state_doc(1, BASE), actor="ci")
    ci = Principal("ci", Role.WRITE)
    lease = await store.acquire(
        conn, "team/leased", parse_plan(plan_doc(BASE, {"b": "b1"}, ("o",))), who=ci
    )
    info = {"ID": "p-1", "Who": "pr@ci", "Operation": shared.PLAN_OPERATION}
    await shared.take(conn, "team/leased", info, who=Principal("pr", Role.PLAN))
    response = await client.get("/ui/state", params={"name": "team/leased"}, headers=HTML)
    html = response.text
    assert response.status_code == 200
    assert 'id="leases"' in html and str(lease.id) in html
    assert f"<code>{address('b')}</code>, <code>output.o</code>" in html
    assert address("a") not in html.split('id="leases"')[1].split("</table>")[0]
    assert 'id="plan-locks"' in html and "<b>pr@ci</b>" in html
    assert "Not locked." not in html

    await store.release(conn, lease.id, who=ci)
    after = (await client.get("/ui/state", params={"name": "team/leased"}, headers=HTML)).text
    assert 'id="leases"' not in after
