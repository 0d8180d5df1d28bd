"""One Terraform project's life on the backend, in order: init and apply, a plan
with no change, a second apply, `state list`, a remote-state reader, destroy."""

import json

import asyncpg
import httpx
import pytest

from tests.helpers.backend import events, versions
from tests.helpers.edges import instance_edges
from tests.helpers.terraform import PASSWORD, PREFIXES, USERNAME, Backend, Terraform

pytestmark = pytest.mark.slow  # runs real Terraform

STATE = "team/prod/network"
ADDRESSES = {
    "terraform_data.vpc",
    "terraform_data.subnet[0]",
    "terraform_data.subnet[1]",
    'module.zone["a"].terraform_data.gateway',
    'module.zone["b"].terraform_data.gateway',
    'terraform_data.route["a"]',
    'terraform_data.route["b"]',
}


@pytest.fixture(scope="module")
async def network(new_project, backend: Backend) -> Terraform:
    terraform = new_project("network", backend.block(STATE))
    (await terraform.run("init")).check()
    return terraform


async def _output(conn: asyncpg.Connection, serial: int, name: str) -> object:
    return await conn.fetchval(
        """SELECT o.value FROM outputs o JOIN state_versions v ON v.id = o.state_version_id
           JOIN states s ON s.id = v.state_id
           WHERE s.name = $1 AND v.serial = $2 AND o.name = $3""",
        STATE,
        serial,
        name,
    )


async def test_init_and_apply_store_the_state_as_a_graph(network, backend, pool) -> None:
    (await network.run("apply", "-auto-approve")).check()
    async with pool.acquire() as conn:
        [serial] = await versions(conn, STATE)
        rows = await conn.fetch(
            """SELECT r.address FROM resources r JOIN state_versions v ON v.id = r.state_version_id
               JOIN states s ON s.id = v.state_id WHERE s.name = $1""",
            STATE,
        )
        assert {r["address"] for r in rows} == ADDRESSES
        assert await _output(conn, serial, "vpc_name") == "vpc-staging"
        pairs = {(source, target) for source, target, _ in await instance_edges(conn, STATE)}
        assert ("terraform_data.subnet[1]", "terraform_data.vpc") in pairs
        assert ('terraform_data.route["a"]', 'module.zone["a"].terraform_data.gateway') in pairs
        log = await events(conn, STATE)
    # LOCK, GET, POST ?ID=<lock>, UNLOCK: each recorded with its actor and the lock's Who
    assert [(e["action"], e["actor"]) for e in log] == [
        ("lock", USERNAME),
        ("write", USERNAME),
        ("unlock", USERNAME),
    ]
    assert log[0]["detail"]["who"] and log[1]["detail"]["lock"] == log[0]["detail"]["id"]
    pulled = await network.run("state pull")
    async with httpx.AsyncClient(
        auth=(USERNAME, PASSWORD), headers={"Content-Type": "application/json"}
    ) as client:
        served = (await client.get(backend.address(STATE))).json()
    assert json.loads(pulled.check().stdout) == served


async def test_a_plan_without_changes_writes_nothing(network, pool) -> None:
    plan = (await network.run("plan")).check()
    assert "No changes." in plan.stdout
    async with pool.acquire() as conn:
        assert len(await versions(conn, STATE)) == 1
        assert [e["action"] for e in await events(conn, STATE)].count("write") == 1


async def test_a_second_apply_with_a_change_keeps_both_versions(network, pool) -> None:
    (await network.run("apply", "-auto-approve", "-var=environment=prod")).check()
    async with pool.acquire() as conn:
        first, second = await versions(conn, STATE)
        assert await _output(conn, first, "vpc_name") == "vpc-staging"
        assert await _output(conn, second, "vpc_name") == "vpc-prod"


async def test_state_list_reads_every_instance_back(network) -> None:
    listed = (await network.run("state list")).check()
    assert set(listed.stdout.split()) == ADDRESSES


async def test_remote_state_reads_the_outputs(new_project, backend) -> None:
    reader = new_project("consumer")
    (await reader.run("init")).check()
    (
        await reader.run(
            "apply",
            "-auto-approve",
            f"-var=address={backend.address(STATE)}",
            f"-var=username={USERNAME}",
            f"-var=password={PASSWORD}",
        )
    ).check()
    outputs = json.loads((await reader.run("output", "-json")).check().stdout)
    assert outputs["vpc_name"]["value"] == "vpc-prod"
    assert outputs["gateway_zones"]["value"] == ["a", "b"]


async def test_destroy_writes_an_empty_state_with_the_next_serial(network, backend, pool) -> None:
    (await network.run("destroy", "-auto-approve", "-var=environment=prod")).check()
    async with pool.acquire() as conn:
        serials = await versions(conn, STATE)
        assert len(serials) == 3 and serials[2] == serials[1] + 1
        assert [e["action"] for e in await events(conn, STATE)].count("delete") == 0
    async with httpx.AsyncClient(
        auth=(USERNAME, PASSWORD), headers={"Content-Type": "application/json"}
    ) as client:
        emptied = (await client.get(backend.address(STATE))).json()
    assert emptied["resources"] == [] and emptied["serial"] == serials[2]


async def test_a_wrong_password_is_refused(new_project, backend) -> None:
    intruder = Backend(backend.url, USERNAME, "not-the-password")
    terraform = new_project("network", intruder.block("team/other"))
    init = await terraform.run("init")
    assert init.returncode != 0
    assert "requires auth" in init.stderr


async def test_a_write_token_is_refused_outside_its_states(new_project, backend) -> None:
    outside = "elsewhere/network"
    terraform = new_project("network", backend.block(outside))
    init = await terraform.run("init")
    assert init.returncode != 0 and "invalid auth" in init.stderr  # Terraform's word for 403
    async with httpx.AsyncClient(auth=(USERNAME, PASSWORD)) as client:
        refused = await client.get(backend.address(outside))
    assert refused.status_code == 403 and refused.json()["code"] == "FORBIDDEN"
    assert refused.json()["error"] == (
        f"token 'tf' (write) may not GET state {outside!r}: state {outside!r} is outside its "
        f"states ({', '.join(PREFIXES)})"
    )
