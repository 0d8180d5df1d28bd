"""Policies on hand-built states: violations appear, persist and resolve across versions
exactly; conditions are checked by PostgreSQL; sensitive values stay out of reach."""

from typing import Any

import asyncpg
import pytest

from app.errors import BadInput, Conflict, NotFound
from app.graph import policies
from app.graph.policies import PolicySpec, Severity
from app.graph.states import delete_state
from app.graph.write.version import write_version
from tests.helpers.states import BUILTIN, resource, state

PUBLIC_BUCKET = PolicySpec(
    name="public-bucket",
    resource_type="aws_s3_bucket",
    condition='$.acl == "public-read"',
    severity=Severity.CRITICAL,
)
OPEN_SSH = PolicySpec(
    name="open-ssh",
    resource_type="aws_security_group",
    condition='exists($.ingress[*] ? (@.cidr_blocks[*] == "0.0.0.0/0" '
    "&& @.from_port <= 22 && @.to_port >= 22))",
)
NO_OWNER = PolicySpec(
    name="no-owner",
    resource_type="*",
    states="prod/*",
    condition="!exists($.tags.owner)",
    severity=Severity.INFO,
)


def bucket(name: str, acl: str, **extra: Any) -> dict[str, Any]:
    return resource("aws_s3_bucket", name, attributes={"acl": acl, **extra})


def group(name: str, *rules: tuple[str, int, int]) -> dict[str, Any]:
    ingress = [{"cidr_blocks": [cidr], "from_port": lo, "to_port": hi} for cidr, lo, hi in rules]
    return resource("aws_security_group", name, attributes={"ingress": ingress})


async def write(conn: asyncpg.Connection, name: str, serial: int, *resources: Any) -> Any:
    return await write_version(
        conn, name, state(list(resources), serial=serial), actor=f"writer-{serial}"
    )


async def violations(conn: asyncpg.Connection, **kwargs: Any) -> list[tuple[Any, ...]]:
    """(state, address, policy, first seen, resolved) of every violation, open or not."""
    page = await policies.list_violations(
        conn, **{"state": None, "policy": None, "open": None, **kwargs}, first=1000
    )
    return [
        (r["state_name"], r["address"], r["policy_name"], r["serial_from"], r["serial_to"])
        for r in page.rows
    ]


async def policy_events(conn: asyncpg.Connection, state_name: str) -> list[tuple[Any, ...]]:
    records = await conn.fetch(
        """SELECT action, serial, actor, detail FROM events
           WHERE state_name = $1 AND action LIKE 'policy-%' ORDER BY created_at, action""",
        state_name,
    )
    return [
        (r["action"], r["serial"], r["actor"], r["detail"]["policy"], r["detail"]["addresses"])
        for r in records
    ]


async def test_a_public_bucket_violates_from_its_write_until_the_write_that_fixes_it(
    conn: asyncpg.Connection,
) -> None:
    await policies.create_policy(conn, PUBLIC_BUCKET, actor="admin")
    written = await write(conn, "prod/s3", 1, bucket("a", "private"), bucket("b", "public-read"))
    assert [(f.address, f.policy, f.opened) for f in written.violations] == [
        ("aws_s3_bucket.b", "public-bucket", True)
    ]
    # b changes but stays public (the violation persists), a turns public
    await write(
        conn, "prod/s3", 2, bucket("a", "public-read"), bucket("b", "public-read", region="eu")
    )
    # b is fixed; a is untouched
    await write(conn, "prod/s3", 3, bucket("a", "public-read"), bucket("b", "private"))
    # a is removed
    await write(conn, "prod/s3", 4, bucket("b", "private"))
    # a comes back public: a new violation
    await write(conn, "prod/s3", 5, bucket("a", "public-read"), bucket("b", "private"))
    assert await violations(conn) == [
        ("prod/s3", "aws_s3_bucket.a", "public-bucket", 2, 4),
        ("prod/s3", "aws_s3_bucket.a", "public-bucket", 5, None),
        ("prod/s3", "aws_s3_bucket.b", "public-bucket", 1, 3),
    ]
    assert await violations(conn, open=True) == [
        ("prod/s3", "aws_s3_bucket.a", "public-bucket", 5, None)
    ]
    assert await policy_events(conn, "prod/s3") == [
        ("policy-violated", 1, "writer-1", "public-bucket", ["aws_s3_bucket.b"]),
        ("policy-violated", 2, "writer-2", "public-bucket", ["aws_s3_bucket.a"]),
        ("policy-resolved", 3, "writer-3", "public-bucket", ["aws_s3_bucket.b"]),
        ("policy-resolved", 4, "writer-4", "public-bucket", ["aws_s3_bucket.a"]),
        ("policy-violated", 5, "writer-5", "public-bucket", ["aws_s3_bucket.a"]),
    ]
    since = await conn.fetchrow(
        "SELECT opened_by, resolved_by FROM policy_violations WHERE serial_from = 2"
    )
    assert dict(since) == {"opened_by": "writer-2", "resolved_by": "writer-4"}


async def test_ssh_open_to_the_world_and_missing_owners_across_versions(
    conn: asyncpg.Connection,
) -> None:
    await policies.create_policy(conn, OPEN_SSH, actor="admin")
    await policies.create_policy(conn, NO_OWNER, actor="admin")
    owned = {"tags": {"owner": "net"}}
    vpc = resource("aws_vpc", "main", attributes=owned)
    await write(
        conn,
        "prod/net",
        1,
        vpc,
        group("web", ("0.0.0.0/0", 443, 443)),  # no SSH
        group("bastion", ("10.0.0.0/8", 22, 22), ("0.0.0.0/0", 0, 65535)),  # SSH from anywhere
    )
    # the same resources in a state the owner policy does not cover
    await write(conn, "stage/net", 1, group("bastion", ("0.0.0.0/0", 22, 22)))
    await write(
        conn,
        "prod/net",
        2,
        vpc,
        group("web", ("0.0.0.0/0", 22, 22)),  # now open to SSH
        group("bastion", ("10.0.0.0/8", 22, 22)),  # closed
    )
    await write(
        conn,
        "prod/net",
        3,
        vpc,
        resource("aws_security_group", "web", attributes={"ingress": [], **owned}),
        resource("aws_security_group", "bastion", attributes={"ingress": [], **owned}),
    )
    assert await violations(conn) == [
        ("prod/net", "aws_security_group.bastion", "no-owner", 1, 3),
        ("prod/net", "aws_security_group.bastion", "open-ssh", 1, 2),
        ("prod/net", "aws_security_group.web", "no-owner", 1, 3),
        ("prod/net", "aws_security_group.web", "open-ssh", 2, 3),
        ("stage/net", "aws_security_group.bastion", "open-ssh", 1, None),
    ]


async def test_a_new_policy_is_evaluated_once_over_the_current_versions(
    conn: asyncpg.Connection,
) -> None:
    await write(conn, "prod/a", 1, bucket("x", "public-read"))
    await write(conn, "prod/a", 2, bucket("x", "private"))  # was public, is not any more
    await write(conn, "prod/b", 7, bucket("y", "public-read"), bucket("z", "private"))
    await policies.create_policy(conn, PUBLIC_BUCKET, actor="admin")
    assert await violations(conn) == [("prod/b", "aws_s3_bucket.y", "public-bucket", 7, None)]
    since = await conn.fetchval("SELECT opened_by FROM policy_violations")
    assert since == "admin"
    assert await policy_events(conn, "prod/b") == [
        ("policy-violated", 7, "admin", "public-bucket", ["aws_s3_bucket.y"])
    ]


async def test_a_write_evaluates_only_the_instances_it_added_or_changed(
    conn: asyncpg.Connection,
) -> None:
    await policies.create_policy(conn, PUBLIC_BUCKET, actor="admin")
    await write(conn, "prod/s3", 1, bucket("a", "public-read"), bucket("b", "private"))
    # Forget a's violation behind the server's back: a write that leaves a alone does
    # not look at it again, one that changes it does.
    await conn.execute("DELETE FROM policy_violations")
    await write(conn, "prod/s3", 2, bucket("a", "public-read"), bucket("b", "public-read"))
    assert await violations(conn) == [("prod/s3", "aws_s3_bucket.b", "public-bucket", 2, None)]
    await write(conn, "prod/s3", 3, bucket("a", "public-read", v=2), bucket("b", "public-read"))
    assert await violations(conn) == [
        ("prod/s3", "aws_s3_bucket.a", "public-bucket", 3, None),
        ("prod/s3", "aws_s3_bucket.b", "public-bucket", 2, None),
    ]


async def test_globs_pick_types_states_and_providers(conn: asyncpg.Connection) -> None:
    await policies.create_policy(
        conn,
        PolicySpec(
            name="data",
            resource_type="terraform_dat?",
            states="team_?/*",  # `_` is literal in a glob
            provider="*builtin*",
            condition="$.input == 1",
        ),
        actor="admin",
    )
    one = resource("terraform_data", "x", provider=BUILTIN, attributes={"input": 1})
    await write(conn, "team_a/x", 1, one)
    await write(conn, "teamba/x", 1, one)  # `_` does not match any character
    await write(conn, "team_a/y", 1, resource("terraform_data", "x", attributes={"input": 1}))
    assert await violations(conn) == [("team_a/x", "terraform_data.x", "data", 1, None)]


async def test_policy_changes_evaluate_again_and_deletes_take_violations_along(
    conn: asyncpg.Connection,
) -> None:
    await write(conn, "prod/s3", 4, bucket("a", "public-read"), bucket("b", "authenticated-read"))
    await policies.create_policy(conn, PUBLIC_BUCKET, actor="admin")
    updated = await policies.update_policy(
        conn,
        "public-bucket",
        {"condition": '$.acl != "private"', "severity": Severity.WARNING},
        actor="admin2",
    )
    assert (updated["policy_condition"], updated["policy_severity"]) == (
        '$.acl != "private"',
        "warning",
    )
    assert await violations(conn) == [
        ("prod/s3", "aws_s3_bucket.a", "public-bucket", 4, None),
        ("prod/s3", "aws_s3_bucket.b", "public-bucket", 4, None),
    ]
    await policies.update_policy(conn, "public-bucket", {"states": "dev/*"}, actor="admin2")
    assert await violations(conn, open=True) == []
    assert await conn.fetchval("SELECT DISTINCT resolved_by FROM policy_violations") == "admin2"
    with pytest.raises(BadInput, match="condition cannot be null"):
        await policies.update_policy(conn, "public-bucket", {"condition": None}, actor="x")
    await policies.delete_policy(conn, "public-bucket")
    assert await conn.fetchval("SELECT count(*) FROM policy_violations") == 0
    with pytest.raises(NotFound):
        await policies.delete_policy(conn, "public-bucket")


async def test_a_deleted_state_takes_its_violations_along(conn: asyncpg.Connection) -> None:
    await policies.create_policy(conn, PUBLIC_BUCKET, actor="admin")
    written = await write(conn, "prod/s3", 1, bucket("a", "public-read"))
    await delete_state(conn, written.state_id, "prod/s3", actor="t")
    assert await conn.fetchval("SELECT count(*) FROM policy_violations") == 0


async def test_names_are_unique(conn: asyncpg.Connection) -> None:
    await policies.create_policy(conn, PUBLIC_BUCKET, actor="admin")
    with pytest.raises(Conflict):
        await policies.create_policy(conn, PUBLIC_BUCKET, actor="admin")


@pytest.mark.parametrize(
    ("condition", "reason"),
    [
        ('$.acl == "public-read" &&', "syntax error at end of jsonpath input"),
        ("$.acl ? (@ = 1)", 'syntax error at or near "=" of jsonpath input'),
        ("exists($.tags.owner", "syntax error at end of jsonpath input"),
        ('$.name like_regex "("', "invalid regular expression"),
        ("$.acl", "it must be a predicate"),
        ("$.ports ? (@ > 22)", "it must be a predicate"),
        ("$.acl == $wanted", 'could not find jsonpath variable "wanted"'),
    ],
)
async def test_invalid_conditions_are_refused_with_postgresql_s_reason(
    conn: asyncpg.Connection, condition: str, reason: str
) -> None:
    spec = PolicySpec(name="bad", resource_type="*", condition=condition)
    with pytest.raises(BadInput, match="invalid condition") as refused:
        await policies.create_policy(conn, spec, actor="admin")
    assert reason in refused.value.message
    assert refused.value.detail["condition"] == condition
    assert await conn.fetchval("SELECT count(*) FROM policies") == 0


@pytest.mark.parametrize(
    "condition",
    [
        '$.password == "hunter2"',
        'exists($.users[*] ? (@."db-Password" starts with "a"))',
        '$.connection.private_key_pem like_regex "BEGIN"',
        "$.auth.TOKEN == 1",
    ],
)
async def test_a_condition_naming_a_key_like_a_secret_is_refused(
    conn: asyncpg.Connection, condition: str
) -> None:
    spec = PolicySpec(name="peek", resource_type="*", condition=condition)
    with pytest.raises(BadInput, match="named like a secret"):
        await policies.create_policy(conn, spec, actor="admin")


async def test_a_condition_naming_a_path_a_state_marks_sensitive_is_refused(
    conn: asyncpg.Connection,
) -> None:
    sensitive = [
        [{"type": "get_attr", "value": "input"}, {"type": "get_attr", "value": "pin"}],
        [
            {"type": "get_attr", "value": "labels"},
            {"type": "index", "value": {"value": "badge", "type": "string"}},
        ],
    ]
    attributes = {"input": {"pin": "1234", "name": "x"}, "labels": {"badge": "7", "team": "a"}}
    await write(
        conn,
        "prod/app",
        1,
        resource("terraform_data", "door", attributes=attributes, sensitive=sensitive),
    )
    for condition in ('$.input.pin == "1234"', '$.labels.badge == "7"'):
        spec = PolicySpec(name="peek", resource_type="terraform_*", condition=condition)
        with pytest.raises(
            BadInput, match=r"terraform_data\.door in state prod/app marks sensitive"
        ):
            await policies.create_policy(conn, spec, actor="admin")
    # the same key elsewhere, or a type the policy does not cover: nothing sensitive named
    other = PolicySpec(name="other", resource_type="aws_*", condition='$.input.pin == "1234"')
    await policies.create_policy(conn, other, actor="admin")
    # its siblings are fine, and wildcards see sensitive values as null
    for name, condition in [
        ("name", '$.input.name == "x"'),
        ("any", 'exists($.** ? (@ == "1234" || @ == "7"))'),
        ("team", 'exists($.labels.* ? (@ == "a"))'),
        ("pairs", 'exists($.labels.keyvalue() ? (@.value == "7"))'),
        ("nulls", "exists($.input.* ? (@ == null))"),
    ]:
        spec = PolicySpec(name=name, resource_type="terraform_*", condition=condition)
        await policies.create_policy(conn, spec, actor="admin")
    assert [v[2] for v in await violations(conn)] == ["name", "nulls", "team"]


async def test_a_shape_of_sensitive_attributes_not_understood_hides_everything(
    conn: asyncpg.Connection,
) -> None:
    odd = resource("terraform_data", "odd", attributes={"input": "x"}, sensitive=[["not a step"]])
    await write(conn, "prod/app", 1, odd)
    spec = PolicySpec(name="input", resource_type="*", condition='$.input == "x"')
    await policies.create_policy(conn, spec, actor="admin")
    assert await violations(conn) == []


async def test_policies_list_by_name(conn: asyncpg.Connection) -> None:
    for spec in (PUBLIC_BUCKET, OPEN_SSH, NO_OWNER):
        await policies.create_policy(conn, spec, actor="admin")
    page = await policies.list_policies(conn, first=2)
    assert [r["policy_name"] for r in page.rows] == ["no-owner", "open-ssh"]
    rest = await policies.list_policies(conn, first=2, after=page.keys[-1])
    assert [r["policy_name"] for r in rest.rows] == ["public-bucket"]
    assert page.total == 3 and page.has_next and not rest.has_next


async def test_a_write_no_policy_covers_evaluates_none_but_resolves_what_is_open(
    conn: asyncpg.Connection,
) -> None:
    evaluated: list[str] = []

    def log(query: asyncpg.connection.LoggedQuery) -> None:
        if "policy_view" in query.query:
            evaluated.append(query.query)

    await policies.create_policy(conn, NO_OWNER, actor="admin")  # prod/* only
    conn.add_query_logger(log)
    try:
        await write(conn, "dev/app", 1, bucket("logs", "private"))
        assert evaluated == []  # no policy covers dev/app, none of its violations is open
        await write(conn, "prod/app", 1, bucket("logs", "private"))
        assert len(evaluated) == 1
        assert await violations(conn) == [("prod/app", "aws_s3_bucket.logs", "no-owner", 1, None)]
        # covered no more (changed behind the server's back, its violation left open): a
        # write that fixes the instance still resolves it
        await conn.execute("UPDATE policies SET states = 'other/*'")
        await write(conn, "prod/app", 2, bucket("logs", "private", tags={"owner": "me"}))
        assert len(evaluated) == 2
        assert await violations(conn) == [("prod/app", "aws_s3_bucket.logs", "no-owner", 1, 2)]
    finally:
        conn.remove_query_logger(log)
