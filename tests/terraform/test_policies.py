"""Policies on real Terraform writes: a `terraform_data` whose input trips an enforced
policy is stored all the same (Terraform writes are warned about, never refused), its
violation opens with that write and resolves with the apply that fixes it; a value
Terraform marks sensitive is out of a condition's reach."""

import pytest

from app.errors import BadInput
from app.graph import policies
from app.graph.policies import PolicySpec
from tests.helpers.backend import versions
from tests.helpers.terraform import USERNAME, Backend

pytestmark = pytest.mark.slow  # runs real Terraform

STATE = "team/policy"
PUBLIC = PolicySpec(
    name="public-data",
    resource_type="terraform_data",
    states="team/*",
    condition='$.input.value.acl == "public-read"',
    enforce=True,
)


async def _violations(pool) -> list[tuple[object, ...]]:
    async with pool.acquire() as conn:
        page = await policies.list_violations(
            conn, state=STATE, policy=PUBLIC.name, open=None, first=100
        )
    return [(r["address"], r["serial_from"], r["serial_to"], r["opened_by"]) for r in page.rows]


async def test_a_violating_apply_is_stored_and_the_fixing_apply_resolves_it(
    new_project, backend: Backend, pool
) -> None:
    async with pool.acquire() as conn:
        await policies.create_policy(conn, PUBLIC, actor="admin")
    terraform = new_project("policy", backend.block(STATE))
    (await terraform.run("init")).check()

    (await terraform.run("apply", "-auto-approve", "-var", "acl=public-read")).check()
    async with pool.acquire() as conn:
        [first] = await versions(conn, STATE)
    # the vault's input is public-read too, but sensitive: the condition reads null there
    assert await _violations(pool) == [("terraform_data.bucket", first, None, USERNAME)]

    (await terraform.run("apply", "-auto-approve", "-var", "acl=private")).check()
    async with pool.acquire() as conn:
        [_, second] = await versions(conn, STATE)
        logged = await conn.fetch(
            """SELECT action, serial, actor, detail->'addresses' AS addresses FROM events
               WHERE state_name = $1 AND action LIKE 'policy-%' AND detail->>'policy' = $2
               ORDER BY created_at""",
            STATE,
            PUBLIC.name,
        )
    assert await _violations(pool) == [("terraform_data.bucket", first, second, USERNAME)]
    assert [tuple(r) for r in logged] == [
        ("policy-violated", first, USERNAME, ["terraform_data.bucket"]),
        ("policy-resolved", second, USERNAME, ["terraform_data.bucket"]),
    ]

    # Terraform marked the vault's input sensitive: a condition naming it is refused
    peek = PolicySpec(
        name="peek", resource_type="terraform_data", condition="$.input.value.pin == 1"
    )
    async with pool.acquire() as conn:
        with pytest.raises(BadInput, match=r"terraform_data\.vault in state team/policy marks"):
            await policies.create_policy(conn, peek, actor="admin")
