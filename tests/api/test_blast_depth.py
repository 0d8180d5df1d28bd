"""Blast radius through GraphQL: the whole radius by default, whatever its depth; with
maxDepth the connection says what it cut (truncated, beyondCount), for Query.blastRadius,
Resource.blastRadius and crossStates alike."""

import json

import pytest

from app.graph.write.version import write_version
from bench.generate import generate_plain_lists
from tests.helpers.across import write_linked_states
from tests.helpers.graphql import gql
from tests.helpers.states import chain_graph

RADIUS = """query($maxDepth: Int, $after: String) {
  blastRadius(state: "g", address: "terraform_data.r", maxDepth: $maxDepth, first: 4,
              after: $after) {
    totalCount truncated beyondCount pageInfo { hasNextPage endCursor }
    edges { node { depth resource { address } } } } }"""


async def _pages(client, max_depth: int | None) -> tuple[set[tuple[int, int, bool]], list]:
    """Every page's (totalCount, beyondCount, truncated), and the rows (depth, address)."""
    counts, rows, after = set(), [], None
    while True:
        radius = (await gql(client, RADIUS, {"maxDepth": max_depth, "after": after}))["blastRadius"]
        counts.add((radius["totalCount"], radius["beyondCount"], radius["truncated"]))
        rows += [(e["node"]["depth"], e["node"]["resource"]["address"]) for e in radius["edges"]]
        if not radius["pageInfo"]["hasNextPage"]:
            return counts, rows
        after = radius["pageInfo"]["endCursor"]


async def test_the_whole_radius_by_default_and_a_limit_says_what_it_cut(client, conn) -> None:
    await write_version(conn, "g", chain_graph(), actor="test")  # a 12-deep chain among 17
    counts, whole = await _pages(client, None)
    assert counts == {(17, 0, False)} and len(whole) == 17 and whole[-1][0] == 12
    counts, cut = await _pages(client, 3)
    assert counts == {(7, 10, True)} and cut == whole[:7]
    for limit in (12, 2**31 - 1):  # at the deepest, or past it: nothing cut
        counts, deep = await _pages(client, limit)
        assert counts == {(17, 0, False)} and deep == whole
    listed = await gql(
        client,
        """{ resources(filter: {state: "g", type: "terraform_data"}, first: 100) {
             edges { node { address blastRadius(maxDepth: 2) { totalCount beyondCount }
                            whole: blastRadius { totalCount truncated } } } } }""",
    )
    by_address = {e["node"]["address"]: e["node"] for e in listed["resources"]["edges"]}
    r = by_address["terraform_data.r"]
    assert r["blastRadius"] == {"totalCount": 5, "beyondCount": 12}
    assert r["whole"] == {"totalCount": 17, "truncated": False}
    k01 = by_address["terraform_data.k01"]  # k02 .. k12
    assert k01["blastRadius"] == {"totalCount": 2, "beyondCount": 9}


ACROSS = """query($maxDepth: Int) {
  blastRadius(state: "team/net", address: "aws_vpc.main", crossStates: true,
              maxDepth: $maxDepth) {
    totalCount truncated beyondCount edges { node { depth } } } }"""


async def test_across_states_a_limit_says_what_it_cut(client) -> None:
    await write_linked_states(client)  # two data sources at depth 1, six instances at depth 2
    whole = (await gql(client, ACROSS, {"maxDepth": None}))["blastRadius"]
    assert (whole["totalCount"], whole["truncated"], whole["beyondCount"]) == (8, False, 0)
    cut = (await gql(client, ACROSS, {"maxDepth": 1}))["blastRadius"]
    assert (cut["totalCount"], cut["truncated"], cut["beyondCount"]) == (2, True, 6)
    assert {e["node"]["depth"] for e in cut["edges"]} == {1}


@pytest.mark.slow
async def test_hand_written_lists_every_dependent_whatever_its_depth(client, conn) -> None:
    """20,000 instances whose lists name a few hubs and recent neighbours: every instance
    but r0's ten depends on r0[0], many direct hops away (past 50 for thousands)."""
    body = json.dumps(generate_plain_lists(20_000)).encode()
    await write_version(conn, "plain", body, actor="test")
    query = """query($maxDepth: Int) {
      blastRadius(state: "plain", address: "aws_instance.r0[0]", maxDepth: $maxDepth) {
        totalCount truncated beyondCount } }"""
    whole = (await gql(client, query))["blastRadius"]
    assert whole == {"totalCount": 19_990, "truncated": False, "beyondCount": 0}
    cut = (await gql(client, query, {"maxDepth": 50}))["blastRadius"]
    assert cut["truncated"] and cut["beyondCount"] > 0
    assert cut["totalCount"] + cut["beyondCount"] == 19_990
