"""Links between states, output lineage, staleness and blast radius across states, over
hand-built states (the edge cases; tests/terraform/test_across.py has real Terraform)."""

from typing import Any

from app.graph.across import cross_blast_radius
from app.graph.edges import Direction
from app.graph.links import read_links
from app.graph.resources import find_resource
from app.graph.states import delete_state
from app.graph.write.version import write_version
from tests.helpers.links import SERVERS, VPC_ID, app, here, network, remote
from tests.helpers.states import resource, state


async def write(conn, name: str, body: bytes) -> None:
    await write_version(conn, name, body, actor="test", servers=SERVERS)


def outputs(link) -> dict[str, tuple[Any, Any, bool]]:
    return {o["name"]: (o["read"], o["current"], o["changed"]) for o in link["outputs"]}


async def test_a_link_to_a_state_here_and_none_elsewhere(conn) -> None:
    await write(conn, "team/net", network())
    await write(conn, "team/app", app())
    [link] = await read_links(conn)
    assert (link["consumer_name"], link["producer_name"], link["address"]) == (
        "team/app",
        "team/net",
        "data.terraform_remote_state.net",
    )
    assert outputs(link) == {
        "region": ("us-east-1", "us-east-1", False),
        "vpc_id": (VPC_ID, VPC_ID, False),
    }
    assert not link["stale"]


async def test_lineage_only_from_meaningful_values(conn) -> None:
    await write(conn, "team/net", network())
    lineage = await conn.fetch(
        """SELECT l.output_name, r.address, l.path FROM output_lineage l
           JOIN resources r ON r.id = l.resource_id AND r.state_id = l.state_id"""
    )
    # the subnet holds the VPC's id too, but depends on the VPC: the value came from it;
    # `true`, "1" and "us-east-1" are held by both, and link nothing
    assert [tuple(r) for r in lineage] == [("vpc_id", "aws_vpc.main", ["id"])]


async def test_a_producer_written_later_is_linked_when_it_appears(conn) -> None:
    await write(conn, "team/app", app())
    assert await read_links(conn) == []
    await write(conn, "team/net", network())
    assert [r["producer_name"] for r in await read_links(conn)] == ["team/net"]


async def test_stale_when_a_read_output_changes_and_fresh_after_the_consumer_writes(
    conn,
) -> None:
    await write(conn, "team/net", network())
    await write(conn, "team/app", app())
    await write(conn, "team/net", network(2, "vpc-99999999999999999"))
    [link] = await read_links(conn)
    assert link["stale"] and link["since"] == 2
    assert outputs(link)["vpc_id"] == (VPC_ID, "vpc-99999999999999999", True)
    # a later write that changes no output it read: still stale since 2, no second event
    await write(conn, "team/net", network(3, "vpc-99999999999999999", new={"value": "x"}))
    [link] = await read_links(conn)
    assert link["since"] == 2
    events = await conn.fetch(
        "SELECT state_name, detail FROM events WHERE action = 'consumer-stale'"
    )
    assert [
        (e["state_name"], e["detail"]["producer_serial"], e["detail"]["outputs"]) for e in events
    ] == [("team/app", 2, ["vpc_id"])]
    await write(
        conn, "team/app", app(2, {"vpc_id": "vpc-99999999999999999", "region": "us-east-1"})
    )
    [link] = await read_links(conn)
    assert not link["stale"] and link["since"] is None


async def test_a_consumer_reading_a_missing_output_is_stale(conn) -> None:
    await write(conn, "team/net", network())
    await write(conn, "team/app", app(read={"vpc_id": VPC_ID, "subnet": "subnet-0a1b2c3d4e"}))
    [link] = await read_links(conn)
    assert link["stale"]
    [subnet] = [o for o in link["outputs"] if o["name"] == "subnet"]
    assert (subnet["present"], subnet["current"], subnet["changed"]) == (False, None, True)


async def test_sensitive_outputs_are_masked_and_compared(conn) -> None:
    secret = {"value": "s3cr3t-password-1", "type": "string", "sensitive": True}
    await write(conn, "team/net", network(secret=secret))
    read = {"vpc_id": VPC_ID, "secret": "s3cr3t-password-1"}
    await write(conn, "team/app", app(read=read))
    [link] = await read_links(conn)
    [masked] = [o for o in link["outputs"] if o["name"] == "secret"]
    assert (masked["read"], masked["current"], masked["sensitive"], masked["changed"]) == (
        None,
        None,
        True,
        False,
    )
    # a link keeps hashes of the values read, never the values
    assert "s3cr3t" not in str(await conn.fetch("SELECT outputs FROM state_links"))
    await write(conn, "team/net", network(2, secret={**secret, "value": "rotated-password-2"}))
    [link] = await read_links(conn)
    [masked] = [o for o in link["outputs"] if o["name"] == "secret"]
    assert (masked["read"], masked["current"], masked["changed"]) == (None, None, True)
    assert "rotated" not in str(await conn.fetch("SELECT detail FROM events"))


async def test_a_producer_deleted_and_recreated(conn) -> None:
    await write(conn, "team/net", network())
    await write(conn, "team/app", app())
    producer = await conn.fetchval("SELECT id FROM states WHERE name = 'team/net'")
    await delete_state(conn, producer, "team/net", actor="test")
    assert await read_links(conn) == []
    await write(conn, "team/net", network())
    [link] = await read_links(conn)
    assert link["producer_name"] == "team/net" and not link["stale"]


async def _radius(conn, name: str, address: str, direction=Direction.DEPENDENTS, **kw):
    root = await find_resource(conn, name, address)
    key = (root["id"], root["version_id"])
    page = (await cross_blast_radius(conn, [key], direction, first=100, **kw)).get(key)
    return (
        []
        if page is None
        else [
            (
                r["state_name"],
                r["address"],
                r["depth"],
                list(zip(r["path_states"], r["path"], strict=True)),
            )
            for r in page.rows
        ]
    )


async def test_blast_radius_across_states(conn) -> None:
    await write(conn, "team/net", network())
    await write(conn, "team/app", app())
    vpc = ("team/net", "aws_vpc.main")
    data = ("team/app", "data.terraform_remote_state.net")
    assert await _radius(conn, *vpc, max_depth=10) == [
        ("team/app", data[1], 1, [vpc, data]),
        ("team/net", "aws_subnet.a", 1, [vpc, ("team/net", "aws_subnet.a")]),
        ("team/app", "aws_instance.web", 2, [vpc, data, ("team/app", "aws_instance.web")]),
    ]
    assert [r[:3] for r in await _radius(conn, *vpc, max_depth=1)] == [
        ("team/app", data[1], 1),
        ("team/net", "aws_subnet.a", 1),
    ]
    # and back: from the app's instance to the VPC its data source's output came from
    assert [
        r[:3]
        for r in await _radius(
            conn, "team/app", "aws_instance.web", Direction.DEPENDENCIES, max_depth=10
        )
    ] == [
        ("team/app", data[1], 1),
        ("team/net", "aws_vpc.main", 2),
    ]


async def test_a_cycle_of_states_ends(conn) -> None:
    # a reads b's output, b reads a's: each one's radius reaches the other and stops
    def ring(name: str, other: str, serial: int = 1) -> bytes:
        own = f"{name}-identifier-0001"
        return state(
            [
                remote("other", here(other), {"id": f"{other}-identifier-0001"}),
                resource(
                    "aws_thing",
                    "main",
                    attributes={"id": own},
                    depends_on=["data.terraform_remote_state.other"],
                ),
            ],
            serial=serial,
            outputs={"id": {"value": own, "type": "string"}},
        )

    await write(conn, "a", ring("a", "b"))
    await write(conn, "b", ring("b", "a"))
    assert [r[:3] for r in await _radius(conn, "a", "aws_thing.main", max_depth=50)] == [
        ("b", "data.terraform_remote_state.other", 1),
        ("b", "aws_thing.main", 2),
        ("a", "data.terraform_remote_state.other", 3),
    ]


async def test_lineage_follows_the_versions(conn) -> None:
    def net(serial: int, *, vpc: bool = True, extra: dict[str, Any] | None = None) -> bytes:
        return state(
            [
                *([resource("aws_vpc", "main", attributes={"id": VPC_ID})] if vpc else []),
                resource("aws_eip", "ip", attributes={"id": "eipalloc-0a1b2c3d"}),
                *([resource("aws_flow_log", "log", attributes=extra)] if extra else []),
            ],
            serial=serial,
            outputs={"vpc_id": {"value": VPC_ID, "type": "string"}},
        )

    async def lineage() -> list[tuple[str, int, int | None]]:
        return [
            tuple(r)
            for r in await conn.fetch(
                """SELECT r.address, l.serial_from, l.serial_to FROM output_lineage l
                   JOIN resources r ON r.id = l.resource_id AND r.state_id = l.state_id
                   ORDER BY l.serial_from, r.address"""
            )
        ]

    await write(conn, "net", net(1))
    await write(conn, "net", net(2, extra={"id": "fl-0a1b2c3d4e"}))  # holds no output value
    assert await lineage() == [("aws_vpc.main", 1, None)]
    await write(conn, "net", net(3, extra={"id": "fl-0a1b2c3d4e", "vpc_id": VPC_ID}))
    assert await lineage() == [("aws_vpc.main", 1, None), ("aws_flow_log.log", 3, None)]
    await write(conn, "net", net(4, vpc=False, extra={"id": "fl-0a1b2c3d4e", "vpc_id": VPC_ID}))
    assert await lineage() == [("aws_vpc.main", 1, 4), ("aws_flow_log.log", 3, None)]
