"""Resource.history through GraphQL: paged newest first, sensitive values withheld."""

from app.graph.write.version import write_version
from tests.helpers.graphql import gql
from tests.helpers.histories import history_version

HISTORY = """query($state: String!, $address: String!, $after: String) {
  blastRadius(state: $state, address: $address) { totalCount }
  resources(filter: {state: $state, address: $address}) { edges { node {
    history(first: 2, after: $after) { totalCount pageInfo { hasNextPage endCursor }
      edges { node { serial change actor fields attributes { path old new sensitive } } } }
  } } }
}"""


async def test_history_through_graphql(client, conn) -> None:
    for serial in range(1, 31):
        await write_version(conn, "h", history_version(serial), actor="t")
    variables = {"state": "h", "address": "aws_s3_bucket.b", "after": None}
    seen = []
    while True:
        data = await gql(client, HISTORY, variables)
        history = data["resources"]["edges"][0]["node"]["history"]
        assert history["totalCount"] == 3
        seen += [(e["node"]["serial"], e["node"]["change"]) for e in history["edges"]]
        if not history["pageInfo"]["hasNextPage"]:
            break
        variables["after"] = history["pageInfo"]["endCursor"]
    assert seen == [(20, "CREATED"), (15, "REMOVED"), (5, "CREATED")]
    db = await gql(client, HISTORY, {"state": "h", "address": "aws_db_instance.db"})
    [entry, _] = [e["node"] for e in db["resources"]["edges"][0]["node"]["history"]["edges"]]
    assert entry["attributes"] == [
        {"path": ["password"], "old": None, "new": None, "sensitive": True}
    ]
