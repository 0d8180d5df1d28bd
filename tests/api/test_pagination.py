"""Keyset pagination walks a big list with no duplicate and no gap."""

import pytest

from app.api.pagination import MAX_FIRST
from app.graph.write.version import write_version
from tests.helpers.graphql import gql
from tests.helpers.states import resource, state

QUERY = """query($after: String, $first: Int) {
  resources(first: $first, after: $after) {
    totalCount pageInfo { hasNextPage hasPreviousPage endCursor }
    edges { cursor node { address state { name } } }
  }
}"""


async def _walk(client, first: int) -> list[tuple[str, str]]:
    seen, after, pages = [], None, 0
    while True:
        page = (await gql(client, QUERY, {"after": after, "first": first}))["resources"]
        assert page["totalCount"] == 10_000
        assert page["pageInfo"]["hasPreviousPage"] == (after is not None)
        seen += [(e["node"]["state"]["name"], e["node"]["address"]) for e in page["edges"]]
        assert page["edges"][-1]["cursor"] == page["pageInfo"]["endCursor"]
        pages += 1
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert pages == -(-10_000 // first)
    return seen


@pytest.mark.slow
async def test_walking_10000_resources_in_pages(client, conn) -> None:
    # two states, so the order (state, address) crosses a state boundary mid-page
    for name, count in (("big/a", 6_000), ("big/b", 4_000)):
        body = state(
            [
                resource("aws_s3_bucket", "b", keys=list(range(count)), attributes={"i": 1}),
            ],
            lineage=name,
        )
        await write_version(conn, name, body, actor="test")
    expected = [
        (r["name"], r["address"])
        for r in await conn.fetch(
            """SELECT s.name, r.address FROM resources r
               JOIN state_versions v ON v.id = r.state_version_id JOIN states s ON s.id = v.state_id
               ORDER BY s.name COLLATE "C", r.address COLLATE "C" """
        )
    ]
    assert len(set(expected)) == 10_000
    assert await _walk(client, MAX_FIRST) == expected
    assert await _walk(client, 777) == expected
    assert await gql(client, "{ resources(first: 0) { totalCount edges { cursor } } }") == {
        "resources": {"totalCount": 10_000, "edges": []}
    }


RADIUS = """query($after: String) {
  blastRadius(state: "hub", address: "aws_vpc.hub", maxDepth: 2, first: 1000, after: $after) {
    totalCount pageInfo { hasNextPage endCursor }
    edges { node { depth path resource { address } } }
  }
}"""


@pytest.mark.slow
async def test_walking_a_100000_resource_blast_radius_in_pages(client, conn) -> None:
    # a hub, 1,000 subnets depending on it, 99 instances depending on each subnet
    subnets = [f"aws_subnet.s{n}" for n in range(1000)]
    body = state(
        [
            resource("aws_vpc", "hub"),
            *[resource("aws_subnet", s[11:], depends_on=["aws_vpc.hub"]) for s in subnets],
            *[
                resource("aws_instance", f"i{n}", keys=list(range(99)), depends_on=[s])
                for n, s in enumerate(subnets)
            ],
        ],
        lineage="hub",
    )
    await write_version(conn, "hub", body, actor="test")
    await conn.execute("ANALYZE resources, resource_dependencies")  # the walk's plan needs them
    instances = [(f"aws_instance.i{n}[{k}]", s) for n, s in enumerate(subnets) for k in range(99)]
    expected = [(1, s, ["aws_vpc.hub", s]) for s in sorted(subnets)] + [
        (2, i, ["aws_vpc.hub", s, i]) for i, s in sorted(instances, key=lambda p: p[0].encode())
    ]
    seen, after, pages = [], None, 0
    while True:
        radius = (await gql(client, RADIUS, {"after": after}))["blastRadius"]
        assert radius["totalCount"] == 100_000
        seen += [
            (e["node"]["depth"], e["node"]["resource"]["address"], e["node"]["path"])
            for e in radius["edges"]
        ]
        pages += 1
        if not radius["pageInfo"]["hasNextPage"]:
            break
        after = radius["pageInfo"]["endCursor"]
    assert pages == 100 and len({a for _, a, _ in seen}) == 100_000
    assert seen == expected  # no duplicate, no gap, in order, each with its path
