"""The configuration graph from real Terraform (`plan -out`, `show -json`), pushed with
`infragraph config push`: a local module called twice (count and for_each), a resource
with depends_on, and one referencing both the VPC and its subnet, whose radius depth is
1 from each once the configuration is known (2 from the VPC by reduction)."""

import subprocess
import sys
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from tests.helpers.terraform import ADMIN_PASSWORD, PASSWORD, Backend

pytestmark = pytest.mark.slow

STATE = "team/config-graph"
T = "terraform_data."
RADIUS = """query($address: String!) { blastRadius(state: "team/config-graph", address: $address)
  { edges { node { depth path resource { address } } } } }"""
REFERENCES = """query($address: String!) {
  resources(filter: {state: "team/config-graph", address: $address}) { edges { node {
    references { reason attributes resource { address } } } } } }"""
MODULES = """{ state(name: "team/config-graph") {
  modules { key source expansion keys instances resourceCount }
  configurations { number origin variables { name sensitive } } } }"""


async def _gql(backend: Backend, query: str, variables: dict[str, Any] | None = None) -> Any:
    headers = {"Authorization": f"Bearer {ADMIN_PASSWORD}"}
    async with httpx.AsyncClient(headers=headers) as client:
        response = await client.post(
            f"{backend.url}/graphql", json={"query": query, "variables": variables or {}}
        )
    body = response.json()
    assert response.status_code == 200 and "errors" not in body, body
    return body["data"]


def _push(backend: Backend, plan: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [Path(sys.executable).parent / "infragraph", "config", "push", "--state", STATE,
         str(plan)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"INFRAGRAPH_URL": backend.url, "INFRAGRAPH_TOKEN": PASSWORD, "PATH": ""},
    )  # fmt: skip


async def _depths(backend: Backend, address: str) -> dict[str, int]:
    data = await _gql(backend, RADIUS, {"address": address})
    return {
        e["node"]["resource"]["address"]: e["node"]["depth"] for e in data["blastRadius"]["edges"]
    }


async def test_modules_references_and_radius(
    new_project: Any, backend: Backend, database_url: str
) -> None:
    project = new_project("config_modules", backend.block(STATE))
    (await project.run("init")).check()
    (await project.run("apply", "-auto-approve")).check()
    # by the reduction of the closed lists: the instance is past the subnet
    assert (await _depths(backend, T + "vpc"))[T + "instance"] == 2

    (await project.run("plan", "-out=tfplan")).check()
    shown = (await project.run("show", "-json", "tfplan")).check()
    plan = project.workdir / "plan.json"
    plan.write_text(shown.stdout)
    pushed = _push(backend, plan)
    assert pushed.returncode == 0, pushed.stderr
    assert "configuration 1 of team/config-graph recorded" in pushed.stdout
    again = _push(backend, plan)
    assert again.returncode == 0 and "unchanged" in again.stdout, again.stderr

    state = (await _gql(backend, MODULES))["state"]
    assert state["configurations"] == [
        {
            "number": 1,
            "origin": "push",
            "variables": [
                {"name": "token", "sensitive": True},
                {"name": "parent", "sensitive": False},
                {"name": "parent", "sensitive": False},
            ],
        }
    ]
    modules = {m["key"]: m for m in state["modules"]}
    assert set(modules) == {"module.counted", "module.each"}
    assert (
        modules["module.counted"]["source"] == modules["module.each"]["source"] == ("./modules/box")
    )
    assert modules["module.counted"]["expansion"] == "count"
    assert modules["module.counted"]["keys"] == [0, 1]
    assert modules["module.each"]["keys"] == ["a", "b"]
    assert modules["module.each"]["instances"] == ['module.each["a"]', 'module.each["b"]']
    assert modules["module.each"]["resourceCount"] == 2

    node = (await _gql(backend, REFERENCES, {"address": T + "instance"}))["resources"]
    references = node["edges"][0]["node"]["references"]
    assert sorted((r["resource"]["address"], r["reason"], r["attributes"]) for r in references) == [
        (T + "subnet", "IMPLICIT", ["input"]),
        (T + "vpc", "IMPLICIT", ["input"]),
    ]
    node = (await _gql(backend, REFERENCES, {"address": T + "audit"}))["resources"]
    references = node["edges"][0]["node"]["references"]
    assert (T + "instance", "EXPLICIT", []) in [
        (r["resource"]["address"], r["reason"], r["attributes"]) for r in references
    ]

    from_vpc = await _depths(backend, T + "vpc")
    assert from_vpc[T + "instance"] == 1 and from_vpc[T + "subnet"] == 1
    assert from_vpc["module.counted[0].terraform_data.box"] == 1  # through var.parent
    assert (await _depths(backend, T + "subnet"))[T + "instance"] == 1

    # the sensitive variable's default is nowhere
    conn = await asyncpg.connect(database_url)
    try:
        stored = await conn.fetch("SELECT document::text AS d FROM configurations")
    finally:
        await conn.close()
    assert stored and not any("not-a-real-secret" in r["d"] for r in stored)

    # the next apply's version follows the configuration too
    (await project.run("apply", "-auto-approve", "-replace=terraform_data.audit")).check()
    assert (await _depths(backend, T + "vpc"))[T + "instance"] == 1
