"""Which remote-state addresses name a state of this server, and output lineage (pure)."""

from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.tfstate.parse import InstanceRow, OutputRow
from app.tfstate.remote import Lineage, Server, output_lineage, producer_name

SERVERS = [Server.parse("http://127.0.0.1:8080"), Server.parse("https://tf.example.com/infra/")]


@pytest.mark.parametrize(
    ("address", "name"),
    [
        ("http://127.0.0.1:8080/states/net", "net"),
        ("http://127.0.0.1:8080/states/team%2Fprod%2Fnet", "team/prod/net"),
        ("http://127.0.0.1:8080/states/team/prod/net", "team/prod/net"),
        ("https://TF.example.com:443/infra/states/net?x=1", "net"),
        ("https://tf.example.com/infra/states/a%20b", "a b"),
        ("http://127.0.0.1:8081/states/net", None),  # another port
        ("https://127.0.0.1:8080/states/net", None),  # another scheme
        ("https://tf.example.com/states/net", None),  # outside the path prefix
        ("https://tf.example.com/infra/other/net", None),
        ("http://127.0.0.1:8080/states/", None),
        ("http://127.0.0.1:99999/states/net", None),  # not a port
        ("s3://bucket/key", None),
    ],
)
def test_addresses_of_this_server_name_their_state(address: str, name: str | None) -> None:
    assert producer_name(address, SERVERS) == name


@given(st.text(min_size=1).filter(lambda n: "\x00" not in n))
def test_any_name_survives_its_url_encoding(name: str) -> None:
    address = "http://127.0.0.1:8080/states/" + quote(name, safe="")
    assert producer_name(address, SERVERS) == name


def test_a_public_url_must_be_http() -> None:
    with pytest.raises(ValueError, match="not an http"):
        Server.parse("ftp://example.com")


def _instance(address: str, attributes: dict) -> InstanceRow:
    return InstanceRow(
        address, 0, 0, "managed", "aws_x", address, "p", None, None, None, None, None, 0,
        attributes, None, None, None, None, None, None, None, None, {}, {},
    )  # fmt: skip


def _output(name: str, value: object) -> OutputRow:
    return OutputRow(name, 0, value, "string", None, {})


def test_lineage_follows_meaningful_values_to_where_they_came_from() -> None:
    instances = [
        _instance("vpc", {"id": "vpc-0a1b2c3d4e", "region": "us-east-1", "on": True, "n": "1"}),
        _instance("subnet", {"vpc_id": "vpc-0a1b2c3d4e", "tags": {"vpc": "vpc-0a1b2c3d4e"}}),
        _instance("other", {"vpc_id": "vpc-0a1b2c3d4e"}),
    ]
    outputs = [
        _output("vpc", "vpc-0a1b2c3d4e"),
        _output("many", {"ids": ["vpc-0a1b2c3d4e"], "region": "us-east-1"}),
        _output("flag", True),
        _output("one", "1"),
        _output("region", "us-east-1"),
    ]
    # the subnet depends on the VPC: the value came from the VPC; `other` does not, so it
    # is a source too
    found = output_lineage(outputs, [i.attributes for i in instances], lambda: [(1, 0)])
    assert found == {
        Lineage("vpc", 0, ("id",)),
        Lineage("vpc", 2, ("vpc_id",)),
        Lineage("many", 0, ("id",)),
        Lineage("many", 2, ("vpc_id",)),
    }


def test_a_value_many_instances_hold_links_nothing() -> None:
    instances = [{"zone": "eu-central-1a-shared"} for _ in range(4)]
    assert output_lineage([_output("zone", "eu-central-1a-shared")], instances, list) == set()
    assert output_lineage([_output("zone", "eu-central-1a-shared")], instances[:3], list) == {
        Lineage("zone", n, ("zone",)) for n in range(3)
    }
