"""Blast radius pages through GraphQL over kept walks: a cursor pages the version it
started on, a list of resources shares the walks, totalCount alone keeps no rows."""

import gc
import weakref
from functools import cached_property

from app.api.graph.loaders import GraphLoaders
from app.config import Settings
from app.graph.write.version import write_version
from tests.helpers.graphql import error_codes, gql
from tests.helpers.states import chain_graph, resource, state

T = "terraform_data."
PAGE = """query($after: String, $serial: Int) {
  blastRadius(state: "g", address: "terraform_data.r", serial: $serial, first: 4,
              after: $after) {
    totalCount pageInfo { hasNextPage endCursor }
    edges { node { depth path resource { address version { serial } } } }
  }
}"""


async def _walk(client, after: str | None = None, serial: int | None = None) -> list[dict]:
    """Pages from `after` to the end: each blastRadius connection."""
    pages = []
    while True:
        radius = (await gql(client, PAGE, {"after": after, "serial": serial}))["blastRadius"]
        pages.append(radius)
        if not radius["pageInfo"]["hasNextPage"]:
            return pages
        after = radius["pageInfo"]["endCursor"]


def _addresses(pages: list[dict]) -> list[str]:
    return [e["node"]["resource"]["address"].removeprefix(T) for p in pages for e in p["edges"]]


def _walks(statements) -> list[str]:
    return [s for s in statements.statements if "WITH RECURSIVE bfs" in s]


async def test_a_cursor_pages_the_version_it_started_on(client, conn) -> None:
    await write_version(conn, "g", chain_graph(), actor="test")
    first = (await gql(client, PAGE))["blastRadius"]
    # a new version between two pages: r gains a dependent, first of its radius
    await write_version(conn, "g", chain_graph(serial=2, grown=True), actor="test")
    rest = await _walk(client, first["pageInfo"]["endCursor"])
    paged = [first, *rest]
    assert {p["totalCount"] for p in paged} == {17}
    assert {e["node"]["resource"]["version"]["serial"] for p in paged for e in p["edges"]} == {1}
    assert _addresses(paged) == _addresses(await _walk(client, serial=1))
    assert len(set(_addresses(paged))) == 17 and "a" not in _addresses(paged)

    new = await _walk(client)  # a new walk: the current version
    assert new[0]["totalCount"] == 18 and _addresses(new)[:2] == ["a", "b"]
    variables = {"after": first["pageInfo"]["endCursor"], "serial": 2}
    assert await error_codes(client, PAGE, variables) == ["BAD_INPUT"]


async def test_a_list_of_resources_shares_the_kept_walks(client, conn, statements) -> None:
    await write_version(conn, "g", chain_graph(), actor="test")
    listed = await gql(
        client,
        """{ resources(filter: {state: "g"}) { edges { node { address
              blastRadius(first: 4) { pageInfo { endCursor } } } } } }""",
    )
    assert len(_walks(statements)) == 1  # every resource's radius, one walk statement
    [r] = [e["node"] for e in listed["resources"]["edges"] if e["node"]["address"] == T + "r"]
    statements.statements.clear()
    rest = await _walk(client, r["blastRadius"]["pageInfo"]["endCursor"])
    assert _walks(statements) == []  # the root's walk was kept by the list
    assert len(_addresses(rest)) == 13


async def test_total_count_alone_keeps_no_rows(client, conn, statements) -> None:
    await write_version(conn, "g", chain_graph(), actor="test")
    count = '{ blastRadius(state: "g", address: "terraform_data.r") { totalCount } }'
    assert await gql(client, count) == {"blastRadius": {"totalCount": 17}}
    [walk] = _walks(statements)
    assert "path" not in walk  # the count-only walk
    kept = "SELECT total, kept FROM blast_walks"
    assert [tuple(r) for r in await conn.fetch(kept)] == [(17, False)]
    assert await conn.fetchval("SELECT count(*) FROM blast_walk_rows") == 0
    assert len(_addresses(await _walk(client))) == 17  # rows wanted: walked and kept
    assert [tuple(r) for r in await conn.fetch(kept)] == [(17, True)]


ATTRIBUTES = """{ blastRadius(state: "g", address: "terraform_data.r", first: 3) {
  edges { node { resource { address ... on Resource { input: attributes(path: ["input"]) } } } }
} }"""


def _page_reads(statements) -> list[str]:
    return [s for s in statements.statements if "FROM blast_walk_rows x" in s]


async def test_a_page_reads_attributes_only_when_the_query_selects_them(
    client, conn, statements
) -> None:
    await write_version(conn, "g", chain_graph(), actor="test")
    await _walk(client)  # kept: each page below is one read
    statements.statements.clear()
    radius = (await gql(client, ATTRIBUTES))["blastRadius"]
    shown = [e["node"]["resource"] for e in radius["edges"]]
    assert shown == [{"address": T + x, "input": x} for x in ("b", "c", "k01")]
    [read] = _page_reads(statements)
    assert "r.attributes" in read  # selected (in a fragment): read with the page
    assert len(statements.statements) == 2  # the root, the page: no loader of attributes

    statements.statements.clear()
    await _walk(client)
    assert _page_reads(statements)
    assert not [s for s in _page_reads(statements) if "r.attributes" in s]


SECRET = [[{"type": "get_attr", "value": "password"}]]
KEYED = state(
    [
        resource("aws_vpc", "main"),
        resource(
            "aws_subnet",
            "s",
            keys=[0, 1],
            sensitive=SECRET,
            attributes={"password": "p", "cidr": "10.0.0.0/24"},
            depends_on=["aws_vpc.main"],
        ),
        resource("aws_instance", "i", keys=["a"], depends_on=["aws_subnet.s"]),
    ]
)


async def test_a_page_reads_index_keys_and_sensitive_paths_only_when_it_shows_them(
    client, conn, statements
) -> None:
    """They are read with the page when its resources show them (or their attributes,
    which they mask), as the resources list shows them; else the page reads without."""
    await write_version(conn, "k", KEYED, actor="test")
    fields = "address indexKey sensitiveAttributes attributes"
    listed = await gql(
        client, f'{{ resources(filter: {{state: "k"}}) {{ edges {{ node {{ {fields} }} }} }} }}'
    )
    expected = {e["node"]["address"]: e["node"] for e in listed["resources"]["edges"]}
    radius = """{ blastRadius(state: "k", address: "aws_vpc.main") {
        edges { node { resource { %s } } } } }"""
    await gql(client, radius % "address")  # kept: each page below is one read
    for shown in ("address indexKey", "address sensitiveAttributes", "address attributes"):
        statements.statements.clear()
        page = (await gql(client, radius % shown))["blastRadius"]["edges"]
        names = shown.split()
        assert [e["node"]["resource"] for e in page] == [
            {name: expected[address][name] for name in names}
            for address in ("aws_subnet.s[0]", "aws_subnet.s[1]", 'aws_instance.i["a"]')
        ]
        [read] = _page_reads(statements)
        assert "r.index_key" in read and "sensitive_attributes" in read
    assert expected["aws_subnet.s[1]"]["attributes"] == {"password": None, "cidr": "10.0.0.0/24"}
    assert expected["aws_subnet.s[0]"]["indexKey"] == 0
    statements.statements.clear()
    await gql(client, radius % "address type")
    [read] = _page_reads(statements)
    assert "index_key" not in read and "sensitive_attributes" not in read


def test_the_loaders_go_with_their_request() -> None:
    """No loader refers back to its GraphLoaders (a cycle): what a request's loaders
    loaded (a page of a thousand rows) goes with the request, not at a garbage collection."""
    loaders = GraphLoaders(None, Settings())  # type: ignore[arg-type]
    names = [n for n, v in vars(GraphLoaders).items() if isinstance(v, cached_property)]
    assert "blast_radius" in names
    for name in names:
        getattr(loaders, name)  # each built
    gone = weakref.ref(loaders)
    gc.disable()
    try:
        del loaders
        assert gone() is None
    finally:
        gc.enable()
