"""A Terraform plan from real Terraform (`plan -out`, `show -json`), submitted with
`infragraph impact`: what it changes, what it reaches in its state and in the consumer
reading its output, the policy its new input breaks; the same plan after another apply
is stale."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.terraform import ADMIN_PASSWORD, PASSWORD, USERNAME, Backend, Terraform

pytestmark = pytest.mark.slow

PRODUCER, CONSUMER = "team/plan-producer", "team/plan-consumer"
T = "terraform_data."
DATA = "data.terraform_remote_state.producer"
POLICY = """mutation($input: CreatePolicyInput!) { createPolicy(input: $input) { name } }"""


async def _admin_gql(backend: Backend, query: str, variables: dict[str, Any]) -> Any:
    headers = {"Authorization": f"Bearer {ADMIN_PASSWORD}"}
    async with httpx.AsyncClient(headers=headers) as client:
        response = await client.post(
            f"{backend.url}/graphql", json={"query": query, "variables": variables}
        )
    body = response.json()
    assert response.status_code == 200 and "errors" not in body, body
    return body["data"]


def _impact(backend: Backend, plan: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [Path(sys.executable).parent / "infragraph", "impact", "--state", PRODUCER, str(plan),
         *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"INFRAGRAPH_URL": backend.url, "INFRAGRAPH_TOKEN": PASSWORD, "PATH": ""},
    )  # fmt: skip


async def _plan_json(producer: Terraform, generation: str) -> Path:
    (await producer.run("plan", "-out=tfplan", f"-var=generation={generation}")).check()
    shown = (await producer.run("show", "-json", "tfplan")).check()
    path = producer.workdir / f"plan-{generation}.json"
    path.write_text(shown.stdout)
    return path


async def test_a_plan_replacing_the_root(new_project, backend: Backend) -> None:
    producer = new_project("plans_producer", backend.block(PRODUCER))
    consumer = new_project("plans_consumer", backend.block(CONSUMER))
    (await producer.run("init")).check()
    (await producer.run("apply", "-auto-approve")).check()
    (await consumer.run("init")).check()
    consumer_vars = (
        f"-var=producer={backend.address(PRODUCER)}",
        f"-var=username={USERNAME}",
        f"-var=password={PASSWORD}",
    )
    (await consumer.run("apply", "-auto-approve", *consumer_vars)).check()
    await _admin_gql(
        backend,
        POLICY,
        {
            "input": {
                "name": "no-root-two",
                "severity": "WARNING",
                "resourceType": "terraform_data",
                "states": "team/plan-*",
                "condition": '$.input == "root-two"',
                "enforce": True,
            }
        },
    )
    plan = await _plan_json(producer, "two")

    done = _impact(backend, plan, "--format", "json", "--fail-on", "critical")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    actions = {c["address"]: c["action"] for c in report["changes"]}
    assert actions[T + "root"] == "REPLACE"
    # Terraform replaces mid and leaf with it (their trigger is unknown until then)
    assert actions[T + "mid"] == actions[T + "leaf"] == "REPLACE"
    assert report["stale"] is False
    impact = {(m["state"], m["address"]): m for m in report["impact"]}
    assert impact[(PRODUCER, T + "mid")]["depth"] == 1
    assert impact[(PRODUCER, T + "mid")]["path"] == [T + "root", T + "mid"]
    # the leaf is nearest to the mid, itself replaced: depth and path from it, both reach it
    assert impact[(PRODUCER, T + "leaf")]["depth"] == 1
    assert impact[(PRODUCER, T + "leaf")]["path"] == [T + "mid", T + "leaf"]
    assert impact[(PRODUCER, T + "leaf")]["via"] == [T + "mid", T + "root"]
    assert impact[(CONSUMER, DATA)]["depth"] == 1
    assert impact[(CONSUMER, T + "user")]["depth"] == 2
    assert impact[(CONSUMER, T + "user")]["pathStates"] == [PRODUCER, CONSUMER, CONSUMER]
    assert [(c["consumer"], c["address"], c["output"]) for c in report["staleConsumers"]] == [
        (CONSUMER, DATA, "root_id")
    ]
    assert [(v["policy"], v["address"], v["opened"]) for v in report["violations"]] == [
        ("no-root-two", T + "root", True)
    ]
    assert report["blocked"] is True

    markdown = _impact(backend, plan, "--format", "markdown")
    assert markdown.returncode == 0, markdown.stderr
    assert CONSUMER in markdown.stdout and T + "root" in markdown.stdout

    (await producer.run("apply", "-auto-approve", "-var=generation=three")).check()
    again = _impact(backend, plan, "--format", "json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["stale"] is True
