"""Encrypted OpenTofu versions over GraphQL: marked, counted as empty, never an error
where there is simply nothing to read; a diff that cannot be made says why."""

from app.graph.write.version import write_version
from app.tfstate import parse_body
from tests.helpers.backend import tf_state
from tests.helpers.graphql import gql, post
from tests.helpers.tofu_encryption import tofu


async def _write(conn, name: str, body: bytes) -> None:
    await write_version(conn, name, body, actor="tofu", state=parse_body(body))


async def test_encrypted_versions_are_marked_and_hold_nothing(client, conn) -> None:
    await _write(conn, "mixed", tf_state(serial=1, value="plain"))
    await _write(conn, "mixed", tofu().encrypt(tf_state(serial=2, value="sealed")))
    await _write(conn, "sealed", tofu().encrypt(tf_state(serial=1)))
    await _write(conn, "plain", tf_state(serial=1))
    data = await gql(
        client,
        """{ states { edges { node { name encrypted lineage
               currentVersion { serial encrypted resourceCount outputs { name }
                                resources { totalCount edges { node { address } } } }
               versions { edges { node { serial encrypted resourceCount } } } } } } }""",
    )
    states = {e["node"]["name"]: e["node"] for e in data["states"]["edges"]}
    assert {name: s["encrypted"] for name, s in states.items()} == {
        "mixed": True,
        "plain": False,
        "sealed": True,
    }
    sealed_version = {
        "serial": 2,
        "encrypted": True,
        "resourceCount": 0,
        "outputs": [],
        "resources": {"totalCount": 0, "edges": []},
    }
    assert states["mixed"]["currentVersion"] == sealed_version
    assert states["mixed"]["versions"]["edges"] == [
        {"node": {"serial": 2, "encrypted": True, "resourceCount": 0}},
        {"node": {"serial": 1, "encrypted": False, "resourceCount": 1}},
    ]
    # the envelope's clear lineage is the state's
    assert states["sealed"]["lineage"] == "lineage-1"
    assert states["plain"]["currentVersion"]["encrypted"] is False

    # inventory and search see the current versions they can read
    found = await gql(
        client,
        """{ inventory(groupBy: STATE) { key count }
             resources(filter: {attributes: {input: "sealed"}}) { totalCount }
             old: state(name: "mixed") { version(serial: 1) { encrypted
               resources { edges { node { attributes } } } } } }""",
    )
    assert found["inventory"] == [{"key": "plain", "count": 1}]
    assert found["resources"] == {"totalCount": 0}
    assert found["old"]["version"] == {
        "encrypted": False,
        "resources": {"edges": [{"node": {"attributes": {"input": "plain"}}}]},
    }


async def test_a_diff_with_an_encrypted_version_says_it_cannot_be_made(client, conn) -> None:
    await _write(conn, "mixed", tf_state(serial=1, value="a"))
    await _write(conn, "mixed", tofu().encrypt(tf_state(serial=2, value="b")))
    await _write(conn, "mixed", tf_state(serial=3, value="c"))
    query = """query ($serial: Int!, $against: Int!) { state(name: "mixed") {
                 version(serial: $serial) { diff(against: $against) { added } } } }"""
    for serial, against in ((3, 2), (2, 1)):
        body = await post(client, query, {"serial": serial, "against": against})
        [error] = body["errors"]
        assert error["extensions"]["code"] == "BAD_INPUT"
        assert error["message"].startswith("version 2 is encrypted by OpenTofu")
    readable = await gql(
        client,
        """{ state(name: "mixed") { version(serial: 3) { diff(against: 1) {
               added removed changed { address } } } } }""",
    )
    assert readable["state"]["version"]["diff"] == {
        "added": [],
        "removed": [],
        "changed": [{"address": "terraform_data.x"}],
    }
