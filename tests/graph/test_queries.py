"""Read queries over imported corpus states and generated ones."""

import json
from collections import Counter

from app.errors import NotFound
from app.graph.diff import AttributeChange, attribute_changes, diff_versions
from app.graph.events import list_events
from app.graph.inventory import GroupBy, inventory
from app.graph.queries import (
    StateKind,
    current_versions,
    list_states,
    locks_of,
    outputs_of,
    resource_counts,
    versions_at,
    versions_of,
)
from app.graph.resources import (
    Mode,
    ResourceFilter,
    attributes_of,
    search_resources,
    version_resources,
)
from app.graph.sensitive import sensitive_paths, withhold
from app.graph.write.version import write_version
from app.paging import ALL
from app.tfstate import parse_state
from tests.helpers.corpus import corpus_files
from tests.helpers.states import PASSWORD, resource, state


def _fleet(serial: int = 1, buckets: int = 6) -> bytes:
    """Buckets (every third public), a VPC with subnets in a module, a data source."""
    return state(
        [
            resource(
                "aws_s3_bucket",
                "b",
                keys=list(range(buckets)),
                attributes={"public_access": True, "tags": {"env": "prod"}},
            ),
            resource("aws_vpc", "main", attributes={"cidr_block": "10.0.0.0/16"}),
            resource(
                "aws_subnet",
                "s",
                module="module.net",
                keys=["a", "b"],
                attributes={"vpc": "main", "tags": {"env": "prod", "tier": "web"}},
                depends_on=["aws_vpc.main"],
            ),
            resource("aws_ami", "ubuntu", mode="data", attributes={"id": "ami-1"}),
        ],
        serial=serial,
    )


async def test_inventory_equals_a_plain_sql_count(conn) -> None:
    current = {f"corpus/{i}": path.read_bytes() for i, path in enumerate(corpus_files())}
    current["fleet"] = _fleet(1)
    for name, body in current.items():
        await write_version(conn, name, body, actor="test")
    current["fleet"] = _fleet(2, buckets=9)  # the current version: 9 buckets
    await write_version(conn, "fleet", current["fleet"], actor="test")
    # The reference: the current documents as posted, counted in Python.
    rows = [(name, row) for name, body in current.items() for row in parse_state(body).instances]
    plain = {
        GroupBy.TYPE: lambda name, row: row.type,
        GroupBy.PROVIDER: lambda name, row: row.provider,
        GroupBy.STATE: lambda name, row: name,
        GroupBy.MODULE: lambda name, row: row.module_path or "",
    }
    for group, key in plain.items():
        expected = Counter(key(name, row) for name, row in rows)
        got = await inventory(conn, group)
        assert {r["key"]: r["count"] for r in got} == expected
        counts = [r["count"] for r in got]
        assert counts == sorted(counts, reverse=True)
    by_type = {r["key"]: r["count"] for r in await inventory(conn, GroupBy.TYPE)}
    assert by_type["aws_s3_bucket"] == 9
    managed = await inventory(conn, GroupBy.STATE, ResourceFilter(state="fleet", mode=Mode.MANAGED))
    assert [(r["key"], r["count"]) for r in managed] == [("fleet", 12)]


async def test_attribute_search_finds_exactly_the_matching_instances(conn) -> None:
    await write_version(conn, "fleet", _fleet(), actor="test")
    other = state(
        [
            resource("aws_s3_bucket", "private", attributes={"public_access": False}),
            resource("aws_s3_bucket", "open", attributes={"public_access": True, "x": [1, 2]}),
        ],
        lineage="other",
    )
    await write_version(conn, "other", other, actor="test")

    async def addresses(f: ResourceFilter) -> list[tuple[str, str]]:
        page = await search_resources(conn, f, first=1000)
        assert page.total == len(page.rows)
        return [(r["state_name"], r["address"]) for r in page.rows]

    public = await addresses(ResourceFilter(attributes={"public_access": True}))
    assert public == [
        *[("fleet", f"aws_s3_bucket.b[{i}]") for i in range(6)],
        ("other", "aws_s3_bucket.open"),
    ]
    prod_web = await addresses(ResourceFilter(attributes={"tags": {"tier": "web"}}))
    assert prod_web == [
        ("fleet", 'module.net.aws_subnet.s["a"]'),
        ("fleet", 'module.net.aws_subnet.s["b"]'),
    ]
    assert await addresses(ResourceFilter(attributes={"x": [2]})) == [
        ("other", "aws_s3_bucket.open")
    ]
    assert await addresses(ResourceFilter(attributes={"public_access": "true"})) == []
    both = ResourceFilter(state="fleet", type="aws_s3_bucket", attributes={"tags": {"env": "prod"}})
    assert len(await addresses(both)) == 6
    assert await addresses(ResourceFilter(module="")) == [
        *public[:6],
        ("fleet", "aws_vpc.main"),
        ("fleet", "data.aws_ami.ubuntu"),
        ("other", "aws_s3_bucket.open"),
        ("other", "aws_s3_bucket.private"),
    ]
    assert len(await addresses(ResourceFilter(module="module.net", mode=Mode.MANAGED))) == 2
    assert await addresses(ResourceFilter(address_prefix="data.")) == [
        ("fleet", "data.aws_ami.ubuntu")
    ]


async def test_attributes_of_rows_read_without_them(conn) -> None:
    written = await write_version(
        conn, "attrs", state([resource("null_resource", "a", attributes={"id": "x"})]), actor="t"
    )
    [row] = await conn.fetch(
        "SELECT id, attributes FROM resources WHERE state_id = $1", written.state_id
    )
    other = (row["id"], written.version_id)  # not a state id: nothing found
    found = await attributes_of(conn, [(row["id"], written.state_id), other])
    assert found == {(row["id"], written.state_id): row["attributes"]}


async def test_search_covers_only_current_versions_unless_a_version_is_given(conn) -> None:
    first = await write_version(conn, "fleet", _fleet(1, buckets=2), actor="test")
    second = await write_version(conn, "fleet", _fleet(2, buckets=4), actor="test")
    buckets = ResourceFilter(type="aws_s3_bucket")
    assert (await search_resources(conn, buckets, first=100)).total == 4
    pages = await version_resources(conn, [first.version_id, second.version_id], buckets, first=3)
    assert pages[first.version_id].total == 2 and not pages[first.version_id].has_next
    assert pages[second.version_id].total == 4 and pages[second.version_id].has_next
    counts = await resource_counts(conn, [first.version_id, second.version_id])
    assert counts == {first.version_id: 6, second.version_id: 8}


async def test_states_versions_outputs_locks(conn) -> None:
    for name in ("team/b", "team/a", "solo"):
        await write_version(conn, name, _fleet(), actor="test")
    secret = state(
        [],
        serial=2,
        outputs={
            "plain": {"value": "v", "type": "string"},
            "secret": {"value": "hunter2", "type": "string", "sensitive": True},
        },
    )
    written = await write_version(conn, "solo", secret, actor="test")
    page = await list_states(conn, first=2, name_prefix="team/")
    assert [r["state_name"] for r in page.rows] == ["team/a", "team/b"] and page.total == 2
    assert (await list_states(conn, first=10, kind=StateKind.IAC)).total == 0
    after = await list_states(conn, first=10, after=("solo",))
    assert [r["state_name"] for r in after.rows] == ["team/a", "team/b"] and after.total == 3

    solo = written.state_id
    versions = (await versions_of(conn, [solo], first=1))[solo]
    assert [r["serial"] for r in versions.rows] == [2] and versions.has_next
    older = (await versions_of(conn, [solo], first=1, after=versions.keys[-1]))[solo]
    assert [r["serial"] for r in older.rows] == [1] and not older.has_next
    assert (await current_versions(conn, [solo]))[solo]["serial"] == 2
    assert set(await versions_at(conn, [(solo, 1), (solo, 7)])) == {(solo, 1)}
    outputs = (await outputs_of(conn, [written.version_id]))[written.version_id]
    assert [(o["name"], o["value"], o["sensitive"]) for o in outputs] == [
        ("plain", "v", False),
        ("secret", None, True),
    ]
    info = {"ID": "lock-1", "Who": "alice@host", "Operation": "OperationTypeApply"}
    await conn.execute(
        "INSERT INTO state_locks (state_id, lock_id, info) VALUES ($1, $2, $3)",
        solo,
        "lock-1",
        info,
    )
    lock = (await locks_of(conn, [solo]))[solo]
    assert (lock["lock_id"], lock["who"], lock["operation"]) == (
        "lock-1",
        "alice@host",
        info["Operation"],
    )


async def test_events_newest_first_by_keyset(conn) -> None:
    for serial in range(1, 6):
        await write_version(conn, "s", _fleet(serial), actor=f"actor{serial}")
    await write_version(conn, "t", _fleet(), actor="other")
    walked, after = [], None
    while True:
        page = (await list_events(conn, ["s"], first=2, after=after))["s"]
        assert page.total == 5
        walked += [r["serial"] for r in page.rows]
        if not page.has_next:
            break
        after = page.keys[-1]
    assert walked == [5, 4, 3, 2, 1]
    everything = (await list_events(conn, None, first=100))[ALL]
    assert everything.total == 6 and everything.rows[0]["state_name"] == "t"


async def test_diff_lists_exactly_the_changed_addresses_and_paths(conn) -> None:
    old = state(
        [
            resource("aws_vpc", "main", attributes={"cidr": "10.0.0.0/16", "tags": {"a": "1"}}),
            resource("aws_s3_bucket", "gone", attributes={}),
            resource("aws_s3_bucket", "same", attributes={"x": [1, 2]}),
            resource(
                "aws_db_instance",
                "db",
                attributes={"password": "old-secret", "size": 10, "list": [1, 2]},
                sensitive=PASSWORD,
            ),
        ]
    )
    new = state(
        [
            resource("aws_vpc", "main", attributes={"cidr": "10.1.0.0/16", "tags": {"b": "2"}}),
            resource("aws_s3_bucket", "same", attributes={"x": [1, 2]}),
            resource("aws_s3_bucket", "added", attributes={}),
            resource(
                "aws_db_instance",
                "db",
                attributes={"password": "new-secret", "size": 20, "list": [1, 2, 3]},
                sensitive=PASSWORD,
            ),
        ],
        serial=2,
    )
    await write_version(conn, "s", old, actor="test")
    second = await write_version(conn, "s", new, actor="test")
    diffs = await diff_versions(conn, [(second.version_id, 1), (second.version_id, 9)])
    assert isinstance(diffs[(second.version_id, 9)], NotFound)
    diff = diffs[(second.version_id, 1)]
    assert diff.added == ["aws_s3_bucket.added"] and diff.removed == ["aws_s3_bucket.gone"]
    changed = {c.address: c.changes for c in diff.changed}
    assert changed == {
        "aws_db_instance.db": [
            AttributeChange(("list",), [1, 2], [1, 2, 3], False),
            AttributeChange(("password",), None, None, True),
            AttributeChange(("size",), 10, 20, False),
        ],
        "aws_vpc.main": [
            AttributeChange(("cidr",), "10.0.0.0/16", "10.1.0.0/16", False),
            AttributeChange(("tags", "a"), "1", None, False),
            AttributeChange(("tags", "b"), None, "2", False),
        ],
    }
    assert json.dumps(diff.changed, default=repr).count("secret") == 0


def test_attribute_changes_and_masking() -> None:
    sensitive = sensitive_paths(
        [
            [
                {"type": "get_attr", "value": "users"},
                {"type": "index", "value": {"value": 1, "type": "number"}},
            ],
            [{"type": "get_attr", "value": "weird"}, {"type": "unknown"}],
        ]
    )
    assert sensitive == [("users", "1"), ("weird",)]
    old = {"users": ["a", "b"], "weird": {"k": 1}, "flag": True, "n": 1}
    new = {"users": ["a", "c"], "weird": {"k": 2}, "flag": 1, "n": 1.0}
    assert attribute_changes(old, new, sensitive) == [
        AttributeChange(("flag",), True, 1, False),  # JSON true is not 1
        AttributeChange(("users", "1"), None, None, True),
        AttributeChange(("weird", "k"), None, None, True),
    ]
    assert attribute_changes({"users": ["a"]}, {"users": ["a", "b"]}, sensitive) == [
        AttributeChange(("users",), None, None, True)  # holds a sensitive index
    ]
    assert withhold(old, sensitive) == {**old, "users": ["a", None], "weird": None}
    assert old["users"] == ["a", "b"]  # a copy
    assert sensitive_paths("garbage") == [()] and withhold(old, [()]) is None
