"""Three teams with real Terraform, each holding only what it needs: `net/core` <-
`plat/cluster` <- `apps/web`, one write token per team on its own states, a `plan`
token for apps/web's pull requests, and a `read` token for a dashboard.

net/core names `plat/*` as readers of its outputs, plat/cluster names `apps/*`: each
consumer's token reads its producer's outputs through terraform_remote_state (a GET
reduced to the outputs) with no right to write it. The PR job plans, with and without
a lock, and cannot apply, push a state or force-unlock (403).
"""

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.helpers.live_server import LiveServer
from tests.helpers.terraform import ADMIN_PASSWORD, Backend, Result, Terraform

pytestmark = pytest.mark.slow

NET, PLATFORM, APP = "net/core", "plat/cluster", "apps/web"
PEERING_KEY = f"PLANTED-peering-{uuid.uuid4().hex}"
CLUSTER_TOKEN = f"PLANTED-cluster-{uuid.uuid4().hex}"
TOKENS = {  # name: (role, states)
    "net-ci": ("WRITE", ["net/*"]),
    "plat-ci": ("WRITE", ["plat/*"]),
    "web-ci": ("WRITE", ["apps/*"]),
    "web-pr": ("PLAN", ["apps/*"]),
    "dash": ("READ", ["net/*", "plat/*", "apps/*"]),
}
CREATE = """mutation($name: String!, $role: Role!, $states: [String!]) {
  createToken(name: $name, role: $role, states: $states) { secret } }"""
READERS = """mutation($state: String!, $states: [String!]) {
  setOutputReaders(state: $state, states: $states) { states } }"""


def _gql(url: str, auth: httpx.Auth | tuple[str, str], query: str, **variables: Any) -> Any:
    response = httpx.post(
        f"{url}/graphql", json={"query": query, "variables": variables}, auth=auth, timeout=60
    )
    body = response.json()
    assert response.status_code == 200 and not body.get("errors"), body
    return body["data"]


@dataclass
class Teams:
    server: LiveServer
    backends: dict[str, Backend]  # by token name
    projects: dict[str, Terraform]  # by token name: its project (web-pr: apps/web's)

    def credentials(self, token: str) -> tuple[str, str]:
        backend = self.backends[token]
        return f"-var=username={backend.username}", f"-var=password={backend.password}"

    def request(self, token: str, method: str, state: str, **kwargs: Any) -> httpx.Response:
        backend = self.backends[token]
        return httpx.request(
            method,
            backend.address(state),
            auth=(backend.username, backend.password),
            headers={"Content-Type": "application/json"},
            timeout=60,
            **kwargs,
        )


@pytest.fixture(scope="module")
def tokens(server: LiveServer, database_url: str) -> Iterator[dict[str, Backend]]:
    """The teams' tokens, made by the admin through createToken; gone after the module
    (a token left behind would close the open servers of later tests)."""
    admin = ("boot", ADMIN_PASSWORD)
    backends = {}
    for name, (role, states) in TOKENS.items():
        secret = _gql(server.url, admin, CREATE, name=name, role=role, states=states)
        backends[name] = Backend(server.url, name, secret["createToken"]["secret"])
    yield backends
    import asyncio

    import asyncpg

    async def forget() -> None:
        conn = await asyncpg.connect(database_url)
        try:
            await conn.execute("DELETE FROM api_tokens WHERE name = ANY($1::text[])", [*TOKENS])
        finally:
            await conn.close()

    asyncio.run(forget())


@pytest.fixture(scope="module")
async def teams(new_project, server: LiveServer, tokens: dict[str, Backend]) -> Teams:
    """Each team's project, initialized; net/core applied and naming plat/* its readers."""
    projects = {
        "net-ci": new_project("teams_net", tokens["net-ci"].block(NET)),
        "plat-ci": new_project("teams_platform", tokens["plat-ci"].block(PLATFORM)),
        "web-ci": new_project("teams_app", tokens["web-ci"].block(APP)),
        "web-pr": new_project("teams_app", tokens["web-pr"].block(APP)),
        "dash": new_project("teams_app", tokens["dash"].block(APP)),
    }
    for terraform in projects.values():
        (await terraform.run("init")).check()
    return Teams(server, tokens, projects)


async def _apply_platform(teams: Teams, token: str = "plat-ci", *args: str) -> Result:
    return await teams.projects[token].run(
        "apply",
        "-auto-approve",
        f"-var=network={teams.backends[token].address(NET)}",
        f"-var=cluster_token={CLUSTER_TOKEN}",
        *teams.credentials(token),
        *args,
    )


async def _app(teams: Teams, token: str, command: str, *args: str) -> Result:
    return await teams.projects[token].run(
        command, f"-var=platform={teams.backends[token].address(PLATFORM)}",
        *teams.credentials(token), *args,
    )  # fmt: skip


def _access_log(teams: Teams, method: str, state: str, status: int) -> int:
    path = f"/states/{state}" + ("/lock" if method in ("LOCK", "UNLOCK") else "")
    return teams.server.log().count(f'"{method} {path} HTTP/1.1" {status}')


async def test_each_consumer_reads_its_producers_outputs_and_nothing_more(teams: Teams) -> None:
    net = teams.projects["net-ci"]
    (await net.run("apply", "-auto-approve", f"-var=peering_key={PEERING_KEY}")).check()
    # before net/core names its readers, the platform's token is refused its outputs
    refused = await _apply_platform(teams)
    assert refused.returncode == 1 and "invalid auth" in refused.stderr
    # a writer of the state names who reads its outputs: the platform's states
    named = _gql(teams.server.url, ("net-ci", teams.backends["net-ci"].password), READERS,
                 state=NET, states=["plat/*"])  # fmt: skip
    assert named["setOutputReaders"]["states"] == ["plat/*"]
    (await _apply_platform(teams)).check()  # the sensitive peering key too: a named reader
    platform = _gql(teams.server.url, ("plat-ci", teams.backends["plat-ci"].password), READERS,
                    state=PLATFORM, states=["apps/*"])  # fmt: skip
    assert platform["setOutputReaders"]["states"] == ["apps/*"]

    applied = (await _app(teams, "web-ci", "apply", "-auto-approve")).check()
    assert "service = " in applied.stdout

    # what apps/web's token holds on plat/cluster: its outputs, reduced, and nothing else
    reduced = teams.request("web-ci", "GET", PLATFORM)
    assert reduced.headers["X-Infragraph-Reduced"] == "outputs"
    document = reduced.json()
    assert document["resources"] == [] and set(document["outputs"]) == {
        "cluster_id",
        "cluster_token",
    }
    whole = teams.request("plat-ci", "GET", PLATFORM).json()
    assert (document["serial"], document["lineage"]) == (whole["serial"], whole["lineage"])
    assert teams.request("web-ci", "POST", PLATFORM, content=json.dumps(whole)).status_code == 403
    assert teams.request("web-ci", "DELETE", PLATFORM).status_code == 403
    lock = {"ID": "web-lock", "Operation": "OperationTypeApply", "Who": "web@ci"}
    assert teams.request("web-ci", "LOCK", PLATFORM, json=lock).status_code == 403
    # nor anything of net/core, which names plat/* only
    assert teams.request("web-ci", "GET", NET).status_code == 403
    # the dashboard's read token gets the public outputs alone
    public = teams.request("dash", "GET", PLATFORM)
    assert set(public.json()["outputs"]) == {"cluster_id"}
    assert PEERING_KEY not in reduced.text and PEERING_KEY not in public.text
    assert CLUSTER_TOKEN not in public.text


async def test_a_pr_job_plans_with_a_plan_token_and_cannot_write(teams: Teams) -> None:
    pr = "web-pr"
    planned = (await _app(teams, pr, "plan")).check()
    assert "No changes." in planned.stdout  # it read the whole state of apps/web
    assert _access_log(teams, "LOCK", APP, 200) >= 2  # the apply's and the plan's
    changed = (await _app(teams, pr, "plan", "-lock=false", "-var=name=web2")).check()
    assert "Plan: 0 to add, 1 to change, 0 to destroy." in changed.stdout
    serial = teams.request("web-ci", "GET", APP).json()["serial"]

    applied = await _app(teams, pr, "apply", "-auto-approve", "-var=name=web2")
    assert applied.returncode == 1 and "Error acquiring the state lock" in applied.stderr
    assert "invalid auth" in applied.stderr and _access_log(teams, "LOCK", APP, 403) == 1
    unlocked = await _app(teams, pr, "apply", "-auto-approve", "-lock=false", "-var=name=web2")
    assert unlocked.returncode == 1 and "HTTP error: 403" in unlocked.stderr
    assert _access_log(teams, "POST", APP, 403) == 1

    pulled = (await teams.projects[pr].run("state pull")).check()
    state = json.loads(pulled.stdout)
    assert state["resources"]  # the raw state: a plan token reads it whole
    pushed_file = teams.projects[pr].workdir / "pushed.tfstate"
    pushed_file.write_text(json.dumps({**state, "serial": state["serial"] + 1}))
    pushed = await teams.projects[pr].run("state push", str(pushed_file))
    assert pushed.returncode == 1 and "invalid auth" in pushed.stderr

    held = {"ID": "web-apply", "Operation": "OperationTypeApply", "Who": "web@ci"}
    assert teams.request("web-ci", "LOCK", APP, json=held).is_success
    forced = await teams.projects[pr].run("force-unlock", "-force", "web-apply")
    assert forced.returncode == 1 and "Failed to unlock state" in forced.stderr
    assert teams.request("web-ci", "UNLOCK", APP, json=held).json()["unlocked"] is True
    assert teams.request("web-ci", "GET", APP).json()["serial"] == serial  # nothing written


async def test_a_read_token_gets_the_outputs_alone(teams: Teams) -> None:
    dash = teams.projects["dash"]
    shown = (await dash.run("output", "-json")).check()
    assert set(json.loads(shown.stdout)) == {"service"}
    pulled = json.loads((await dash.run("state pull")).check().stdout)
    assert pulled["resources"] == [] and set(pulled["outputs"]) == {"service"}
    planned = await _app(teams, "dash", "plan")
    assert planned.returncode == 1 and "invalid auth" in planned.stderr  # no lock to plan
