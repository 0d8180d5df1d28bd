"""One graph across states with real Terraform: a network, a platform reading it, and two
apps reading both, every state on the server and every read a terraform_remote_state of
the http backend. In order: the links, the blast radius from the network's VPC to the
apps, the states map; a changed network output makes its readers stale, an apply clears."""

from typing import Any

import httpx
import pytest

from tests.helpers.terraform import PASSWORD, USERNAME, Backend, Terraform

pytestmark = pytest.mark.slow

NETWORK, PLATFORM = "across/network", "across/platform"
APPS = ("across/app-1", "across/app-2")
T, DATA = "terraform_data.", "data.terraform_remote_state."


async def _gql(backend: Backend, query: str, variables: dict[str, Any] | None = None) -> Any:
    async with httpx.AsyncClient(auth=(USERNAME, PASSWORD)) as client:
        response = await client.post(
            f"{backend.url}/graphql", json={"query": query, "variables": variables or {}}
        )
    body = response.json()
    assert response.status_code == 200 and "errors" not in body, body
    return body["data"]


def _credentials() -> tuple[str, str]:
    return f"-var=username={USERNAME}", f"-var=password={PASSWORD}"


@pytest.fixture(scope="module")
async def projects(new_project, backend: Backend) -> dict[str, Terraform]:
    """The four projects, initialized and applied once, in order."""
    found = {
        NETWORK: new_project("across_network", backend.block(NETWORK)),
        PLATFORM: new_project("across_platform", backend.block(PLATFORM)),
        **{app: new_project("across_app", backend.block(app)) for app in APPS},
    }
    for name, terraform in found.items():
        (await terraform.run("init")).check()
        (await _apply(terraform, name, backend)).check()
    return found


async def _apply(terraform: Terraform, name: str, backend: Backend, *args: str) -> Any:
    variables = [*_credentials(), f"-var=network={backend.address(NETWORK)}"]
    if name in APPS:
        variables += [f"-var=platform={backend.address(PLATFORM)}", f"-var=name={name[-5:]}"]
    if name == NETWORK:
        variables = []
    return await terraform.run("apply", "-auto-approve", *variables, *args)


LINKS = """query($name: String!) { state(name: $name) {
  consumers { consumer { name } address stale outputs { name changed } }
  producers { producer { name } address stale }
  unreadOutputs
  currentVersion { outputs { name readers { consumer { name } }
                             sources { resource { address } path } } } } }"""


async def test_links_follow_the_remote_state_reads(projects, backend) -> None:
    network = (await _gql(backend, LINKS, {"name": NETWORK}))["state"]
    assert [(c["consumer"]["name"], c["address"], c["stale"]) for c in network["consumers"]] == [
        (APPS[0], DATA + "network", False),
        (APPS[1], DATA + "network", False),
        (PLATFORM, DATA + "network", False),
    ]
    assert {o["name"] for o in network["consumers"][0]["outputs"]} == {"vpc_id", "vpc_name"}
    readers = {
        o["name"]: sorted(r["consumer"]["name"] for r in o["readers"])
        for o in network["currentVersion"]["outputs"]
    }
    assert readers == {"vpc_id": sorted([*APPS, PLATFORM]), "vpc_name": sorted([*APPS, PLATFORM])}
    sources = {
        o["name"]: [(s["resource"]["address"], s["path"]) for s in o["sources"]]
        for o in network["currentVersion"]["outputs"]
    }
    # the subnets hold the VPC's id too, but depend on it; paths as stored (input and
    # output are dynamically typed: {"value", "type"})
    assert sources == {
        "vpc_id": [(T + "vpc", ["id"])],
        "vpc_name": [(T + "vpc", ["input", "value"]), (T + "vpc", ["output", "value"])],
    }
    app = (await _gql(backend, LINKS, {"name": APPS[0]}))["state"]
    assert [(p["producer"]["name"], p["address"]) for p in app["producers"]] == [
        (NETWORK, DATA + "network"),
        (PLATFORM, DATA + "platform"),
    ]
    platform = (await _gql(backend, LINKS, {"name": PLATFORM}))["state"]
    assert platform["unreadOutputs"] == []
    assert [c["consumer"]["name"] for c in platform["consumers"]] == list(APPS)


RADIUS = """query($after: String) {
  blastRadius(state: "across/network", address: "terraform_data.vpc", crossStates: true,
              first: 4, after: $after) {
    totalCount pageInfo { hasNextPage endCursor }
    edges { node { depth path pathStates resource { address state { name } } } } } }"""


async def test_blast_radius_from_the_vpc_reaches_the_apps(projects, backend) -> None:
    nodes, after = [], None
    while True:
        radius = (await _gql(backend, RADIUS, {"after": after}))["blastRadius"]
        assert radius["totalCount"] == 12
        nodes += [edge["node"] for edge in radius["edges"]]
        if not radius["pageInfo"]["hasNextPage"]:
            break
        after = radius["pageInfo"]["endCursor"]
    vpc = (NETWORK, T + "vpc")
    found = [
        (n["resource"]["state"]["name"], n["resource"]["address"], n["depth"],
         list(zip(n["pathStates"], n["path"], strict=True)))
        for n in nodes
    ]  # fmt: skip
    platform_data = (PLATFORM, DATA + "network")
    cluster = (PLATFORM, T + "cluster")
    expected = [
        *[(app, DATA + "network", 1, [vpc, (app, DATA + "network")]) for app in APPS],
        (NETWORK, T + "subnet[0]", 1, [vpc, (NETWORK, T + "subnet[0]")]),
        (NETWORK, T + "subnet[1]", 1, [vpc, (NETWORK, T + "subnet[1]")]),
        (PLATFORM, DATA + "network", 1, [vpc, platform_data]),
        *[(app, T + "dns", 2, [vpc, (app, DATA + "network"), (app, T + "dns")]) for app in APPS],
        (PLATFORM, T + "cluster", 2, [vpc, platform_data, cluster]),
        *[
            (app, DATA + "platform", 3, [vpc, platform_data, cluster, (app, DATA + "platform")])
            for app in APPS
        ],
        *[
            (app, T + "service", 4, [
                vpc, platform_data, cluster, (app, DATA + "platform"), (app, T + "service")])
            for app in APPS
        ],
    ]  # fmt: skip
    assert found == expected


STATES_GRAPH = """{ statesGraph { states { name } links { consumer producer stale } } }"""
STALE = """query($state: String!) { staleConsumers(state: $state) {
  consumer { name } address since outputs { name read current changed } } }"""


async def test_the_states_map_and_staleness(projects, backend) -> None:
    graph = (await _gql(backend, STATES_GRAPH))["statesGraph"]
    # the session's database may hold other tests' states
    ours = [link for link in graph["links"] if link["consumer"].startswith("across/")]
    assert [s["name"] for s in graph["states"] if s["name"].startswith("across/")] == sorted(
        [NETWORK, PLATFORM, *APPS]
    )
    assert sorted((link["consumer"], link["producer"]) for link in ours) == sorted(
        [(app, NETWORK) for app in APPS] + [(app, PLATFORM) for app in APPS] + [(PLATFORM, NETWORK)]
    )
    assert not any(link["stale"] for link in ours)

    (await projects[NETWORK].run("apply", "-auto-approve", "-var=environment=prod")).check()
    stale = (await _gql(backend, STALE, {"state": NETWORK}))["staleConsumers"]
    assert [s["consumer"]["name"] for s in stale] == [*APPS, PLATFORM]
    serial = await _gql(backend, '{ state(name: "across/network") { currentVersion { serial } } }')
    for item in stale:
        assert item["since"] == serial["state"]["currentVersion"]["serial"]
        assert item["outputs"] == [
            {
                "name": "vpc_name",
                "read": "vpc-staging-main",
                "current": "vpc-prod-main",
                "changed": True,
            }
        ]
    events = await _gql(
        backend, '{ events(state: "across/app-1", first: 5) { edges { node { action detail } } } }'
    )
    [made] = [
        e["node"] for e in events["events"]["edges"] if e["node"]["action"] == "consumer-stale"
    ]
    assert made["detail"]["producer"] == NETWORK and made["detail"]["outputs"] == ["vpc_name"]

    (await _apply(projects[APPS[0]], APPS[0], backend)).check()
    stale = (await _gql(backend, STALE, {"state": NETWORK}))["staleConsumers"]
    assert [s["consumer"]["name"] for s in stale] == [APPS[1], PLATFORM]
