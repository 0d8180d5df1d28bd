"""Real Terraform's closed dependencies get depth, and `-replace` and `taint` show up in
a resource's history."""

import pytest

from app.graph.edges import blast_radius
from app.graph.history import Change, histories
from app.graph.resources import find_resource
from tests.helpers.states import WALK_LIMITS
from tests.helpers.terraform import Backend, Terraform

pytestmark = pytest.mark.slow  # runs real Terraform

STATE = "team/history/chain"
T = "terraform_data."


@pytest.fixture(scope="module")
async def chain(new_project, backend: Backend) -> Terraform:
    terraform = new_project("chain", backend.block(STATE))
    (await terraform.run("init")).check()
    return terraform


async def _history(conn, address: str) -> list:
    found = await find_resource(conn, STATE, T + address)
    key = (found["id"], found["version_id"])
    return (await histories(conn, [key], first=50))[key].rows


async def test_closed_dependencies_have_depth(chain, pool) -> None:
    (await chain.run("apply", "-auto-approve")).check()
    async with pool.acquire() as conn:
        declared = await conn.fetchval(
            "SELECT dependencies_raw FROM resources WHERE address = $1 AND serial_to IS NULL",
            T + "c",
        )
        assert sorted(declared) == [T + "a", T + "b"]  # Terraform closes them
        a = await find_resource(conn, STATE, T + "a")
        key = (a["id"], a["version_id"])
        page = (await blast_radius(conn, [key], limits=WALK_LIMITS, first=10))[key]
        assert [(r["address"], r["depth"]) for r in page.rows] == [(T + "b", 1), (T + "c", 2)]


async def test_replace_and_taint_show_in_the_history(chain, pool) -> None:
    async with pool.acquire() as conn:
        before = await _history(conn, "b")
    (await chain.run("apply", "-auto-approve", f"-replace={T}b")).check()
    async with pool.acquire() as conn:
        replaced = await _history(conn, "b")
    assert len(replaced) == len(before) + 1
    newest = replaced[0]
    assert newest.change is Change.CHANGED and ("id",) in {a.path for a in newest.attributes}
    assert newest.actor == "tf"

    (await chain.run("taint", f"{T}c")).check()
    async with pool.acquire() as conn:
        tainted = (await _history(conn, "c"))[0]
    assert tainted.change is Change.CHANGED and tainted.fields == ["status"]
    assert tainted.attributes == []
