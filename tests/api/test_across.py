"""Across states through GraphQL, over states written through the HTTP backend: blast
radius pages across states, the links' fields, and outputs sensitive in a producer masked
in the consumer's data source (issue 14)."""

from typing import Any

import httpx
import pytest

from app.access import Role
from app.config import Settings
from app.server import create_app
from tests.helpers.across import (
    HERE,
    SECRET,
    consumer,
    post_state,
    producer,
    write_linked_states,
)
from tests.helpers.app import BOOT, as_token
from tests.helpers.graphql import error_codes, gql
from tests.helpers.links import remote
from tests.helpers.states import resource, state

# The cursor goes into the text: a variable in a list argument below a list of resources
# fails in app/api/runtime/lookahead.py with graphql-core 3.3 (variable_values is no longer a dict).
RADIUS = """{ resources(first: 1, filter: {state: "team/net"}) {
  edges { node { blastRadius(crossStates: true, first: 3, after: AFTER) {
    totalCount pageInfo { hasNextPage endCursor }
    edges { node { depth pathStates resource { address state { name } } } } } } } } }"""


async def test_resource_blast_radius_pages_across_states(client) -> None:
    await write_linked_states(client)
    seen: list[tuple[int, str, str]] = []
    after = None
    while True:
        data = await gql(client, RADIUS.replace("AFTER", f'"{after}"' if after else "null"))
        radius = data["resources"]["edges"][0]["node"]["blastRadius"]
        assert radius["totalCount"] == 8
        seen += [
            (
                e["node"]["depth"],
                e["node"]["resource"]["state"]["name"],
                e["node"]["resource"]["address"],
            )
            for e in radius["edges"]
        ]
        if not radius["pageInfo"]["hasNextPage"]:
            break
        after = radius["pageInfo"]["endCursor"]
    assert seen == [
        (1, "team/a", "data.terraform_remote_state.net"),
        (1, "team/b", "data.terraform_remote_state.net"),
        *[(2, name, f"aws_instance.app[{n}]") for name in ("team/a", "team/b") for n in range(3)],
    ]
    # without crossStates the VPC's radius stays in its state: nothing depends on it there
    single = await gql(
        client,
        '{ blastRadius(state: "team/net", address: "aws_vpc.main") { totalCount } }',
    )
    assert single["blastRadius"]["totalCount"] == 0
    # a cursor of one kind of walk is refused by the other
    codes = await error_codes(
        client,
        """query($after: String) { blastRadius(state: "team/net", address: "aws_vpc.main",
           after: $after) { totalCount } }""",
        {"after": after},
    )
    assert codes == ["BAD_INPUT"]


LINKS = """{ state(name: "team/net") {
  unreadOutputs
  consumers { consumer { name } producer { name } address stale
              outputs { name read current sensitive changed } }
  currentVersion { outputs { name readers { consumer { name } }
                             sources { resource { address } path inferred } } } }
  stale: staleConsumers(state: "team/net") { consumer { name } since outputs { name } }
  statesGraph { states { name } links { consumer producer outputs stale } } }"""


async def test_who_reads_whom(client) -> None:
    await write_linked_states(client)
    data = await gql(client, LINKS)
    net = data["state"]
    assert net["unreadOutputs"] == ["unread"]
    masked = {"name": "password", "read": None, "current": None, "sensitive": True}
    vpc = {"name": "vpc_id", "read": "vpc-0a1b2c3d4e5f", "current": "vpc-0a1b2c3d4e5f"}
    assert net["consumers"] == [
        {
            "consumer": {"name": name},
            "producer": {"name": "team/net"},
            "address": "data.terraform_remote_state.net",
            "stale": False,
            "outputs": [
                {**masked, "changed": False},
                {**vpc, "sensitive": False, "changed": False},
            ],
        }
        for name in ("team/a", "team/b")
    ]
    readers = {o["name"]: o["readers"] for o in net["currentVersion"]["outputs"]}
    assert readers["unread"] == [] and len(readers["vpc_id"]) == 2
    sources = {o["name"]: o["sources"] for o in net["currentVersion"]["outputs"]}
    assert sources == {
        "vpc_id": [{"resource": {"address": "aws_vpc.main"}, "path": ["id"], "inferred": True}],
        "password": [],
        "unread": [],
    }
    assert data["stale"] == []
    assert data["statesGraph"]["states"] == [{"name": n} for n in ("team/a", "team/b", "team/net")]
    assert data["statesGraph"]["links"][0] == {
        "consumer": "team/a",
        "producer": "team/net",
        "outputs": ["password", "vpc_id"],
        "stale": False,
    }

    await post_state(client, "team/net", producer(2, secret="rotated-password-2"))
    data = await gql(client, LINKS)
    assert data["stale"] == [
        {"consumer": {"name": name}, "since": 2, "outputs": [{"name": "password"}]}
        for name in ("team/a", "team/b")
    ]


DATA_SOURCE = """query($filter: ResourceFilter!) {
  resources(first: 5, filter: $filter) { edges { node {
    address attributes(path: ["outputs"]) sensitiveAttributes
    history(first: 5) { edges { node { serial attributes { path old new sensitive } } } }
    version { diff(against: 1) { changed { address changes { path old new sensitive } } } }
  } } } }"""


async def test_outputs_sensitive_in_the_producer_are_masked_in_the_consumer(client) -> None:
    await write_linked_states(client)
    await post_state(client, "team/net", producer(2, secret="rotated-password-2"))
    await post_state(client, "team/a", consumer("team/a", 2, secret="rotated-password-2"))
    by_address: dict[str, Any] = {"state": "team/a", "mode": "DATA"}
    data = await gql(client, DATA_SOURCE, {"filter": by_address})
    [node] = [e["node"] for e in data["resources"]["edges"]]
    assert node["attributes"]["value"] == {"vpc_id": "vpc-0a1b2c3d4e5f", "password": None}
    assert "password" in str(node["sensitiveAttributes"])
    [change] = node["history"]["edges"][0]["node"]["attributes"]
    assert change["sensitive"] and change["old"] is None and change["new"] is None
    [diffed] = node["version"]["diff"]["changed"]
    assert all(c["sensitive"] and c["old"] is None for c in diffed["changes"])
    assert SECRET not in str(data) and "rotated" not in str(data)
    # never matched by attribute search
    for value in (SECRET, "rotated-password-2"):
        search = {"attributes": {"outputs": {"value": {"password": value}}}}
        found = await gql(client, DATA_SOURCE, {"filter": search})
        assert found["resources"]["edges"] == []


STATES = """query($first: Int!) { states(first: $first) { edges { node { name
  consumers { consumer { name } producer { name } outputs { name } }
  producers { producer { name } stale }
  unreadOutputs
  currentVersion { outputs { name readers { consumer { name } } } }
  versions(first: 2) { edges { node { resources(first: 5) { edges { node {
    blastRadius(crossStates: true, first: 5) { totalCount edges { node { pathStates } } }
  } } } } } } } } } }"""


async def test_the_links_of_many_states_cost_as_many_statements_as_of_few(
    client, statements
) -> None:
    await write_linked_states(client)
    for name in ("team/c", "team/d", "team/e", "team/f"):
        await post_state(client, name, consumer(name))

    async def count(first: int) -> int:
        statements.statements.clear()
        data = await gql(client, STATES, {"first": first})
        assert len(data["states"]["edges"]) == first
        return len(statements.statements)

    assert await count(2) == await count(7)


async def test_public_urls_are_this_server_too(database_url, conn, monkeypatch) -> None:
    monkeypatch.setenv("INFRAGRAPH_PUBLIC_URLS", "https://tf.example.com/infra/, http://x.example")
    app = create_app(Settings.from_env(), database_url=database_url)
    document = state(
        [
            remote("proxied", "https://TF.example.com:443/infra/states/team%2Fnet", {}),
            remote("direct", "http://t/states/team/net", {}),
            remote("unprefixed", "https://tf.example.com/states/team/net", {}),
            remote("other", "http://x.example:8080/states/team/net", {}),
        ]
    )
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client,
    ):
        await post_state(client, "team/net", producer())
        await post_state(client, "team/app", document)
        data = await gql(client, '{ state(name: "team/app") { producers { address } } }')
    assert [p["address"] for p in data["state"]["producers"]] == [
        "data.terraform_remote_state.direct",
        "data.terraform_remote_state.proxied",
    ]
    monkeypatch.setenv("INFRAGRAPH_PUBLIC_URLS", "ftp://tf.example.com")
    with pytest.raises(ValueError, match="INFRAGRAPH_PUBLIC_URLS"):
        Settings.from_env()


# --- what a token may read ---------------------------------------------------------------

SUBNET = "subnet-0123456789ab"


def _middle() -> bytes:
    """other/mid: reads team/net, and its subnet's id is an output team/end reads."""
    return state(
        [
            remote("net", HERE + "team%2Fnet", {"vpc_id": "vpc-0a1b2c3d4e5f"}),
            resource(
                "aws_subnet",
                "s",
                attributes={"id": SUBNET},
                depends_on=["data.terraform_remote_state.net"],
            ),
        ],
        outputs={"subnet_id": {"value": SUBNET, "type": "string"}},
    )


def _end() -> bytes:
    return state(
        [
            remote("mid", HERE + "other%2Fmid", {"subnet_id": SUBNET}),
            resource("aws_instance", "end", depends_on=["data.terraform_remote_state.mid"]),
        ]
    )


SEEN = """{ blastRadius(state: "team/net", address: "aws_vpc.main", crossStates: true,
                     first: 50) { totalCount edges { node { pathStates } } }
  net: state(name: "team/net") { consumers { consumer { name } } unreadOutputs
    currentVersion { outputs { name readers { consumer { name } } } } }
  end: state(name: "team/end") { producers { producer { name } } }
  staleConsumers(state: "other/mid") { consumer { name } }
  statesGraph { states { name } links { consumer producer } } }"""


async def test_a_token_sees_no_state_across_it_may_not_read(closed_app, db_token) -> None:
    """team/net is read by team/a and other/mid; team/end reads other/mid. A read token
    for team/* sees team/a only: the walk does not enter other/mid, so it never reaches
    team/end either (which the admin's walk does, through other/mid)."""
    reader = await db_token("reader", Role.READ, states=["team/*"])
    async with as_token(closed_app, BOOT) as admin:
        await post_state(admin, "team/net", producer())
        await post_state(admin, "team/a", consumer("team/a"))
        await post_state(admin, "other/mid", _middle())
        await post_state(admin, "team/end", _end())
        everything = await gql(admin, SEEN)
    async with as_token(closed_app, reader) as client:
        seen = await gql(client, SEEN)

    def states_in(data: Any) -> set[str]:
        radius = {s for e in data["blastRadius"]["edges"] for s in e["node"]["pathStates"]}
        net = data["net"]
        return (
            radius
            | {c["consumer"]["name"] for c in net["consumers"]}
            | {
                r["consumer"]["name"]
                for o in net["currentVersion"]["outputs"]
                for r in o["readers"]
            }
            | {p["producer"]["name"] for p in data["end"]["producers"]}
            | {s["name"] for s in data["statesGraph"]["states"]}
            | {n for link in data["statesGraph"]["links"] for n in link.values()}
        )

    assert states_in(everything) == {"team/net", "team/a", "other/mid", "team/end"}
    assert states_in(seen) == {"team/net", "team/a"}
    radius = seen["blastRadius"]
    assert radius["totalCount"] == len(radius["edges"]) == 4  # a's data source, 3 instances
    assert everything["blastRadius"]["totalCount"] == 4 + 2 + 2  # mid's 2, end's 2
    assert seen["staleConsumers"] == [] and seen["end"]["producers"] == []
    # an output other/mid reads is unread as far as the reader can see
    assert seen["net"]["unreadOutputs"] == everything["net"]["unreadOutputs"] == ["unread"]
