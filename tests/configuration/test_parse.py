"""Reading a plan's configuration section (pure): module calls, references resolved
through module variables and outputs, depends_on, no value kept, refusals; fuzzed."""

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.configuration.parse import (
    EXPLICIT,
    IMPLICIT,
    Reference,
    config_address,
    parse_configuration,
    required_configuration,
)
from app.errors import BadInput
from tests.helpers.configurations import call, config_resource, configuration, module, network, refs

names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
keys = st.one_of(
    st.integers(0, 99).map(str),
    st.text(st.characters(codec="ascii", exclude_characters='"\\'), max_size=6).map(
        lambda k: json.dumps(k)
    ),
)


def test_network() -> None:
    found = parse_configuration(network())
    assert [(m.key, m.source, m.version_constraint, m.expansion) for m in found.modules] == [
        ("module.box", "terraform-aws-modules/s3-bucket/aws", "~> 4.0", "count")
    ]
    assert set(found.references) == {
        Reference("aws_subnet.a", "aws_vpc.main", IMPLICIT, ("vpc_id",)),
        Reference("aws_instance.web", "aws_subnet.a", IMPLICIT, ("subnet_id",)),
        Reference("aws_instance.web", "aws_vpc.main", IMPLICIT, ("vpc_security_group_ids",)),
        Reference("aws_s3_bucket.logs", "aws_instance.web", EXPLICIT),
        # the module's variable, set from the VPC's id
        Reference("module.box.aws_s3_bucket.b", "aws_vpc.main", IMPLICIT, ("tags",)),
    }
    document = json.dumps(found.document())
    assert "hunter2" not in document and "10.0.0.0" not in document


SUBNET = "module.net.module.inner.aws_subnet.s"


def test_outputs_nested_modules_blocks_and_module_depends_on() -> None:
    inner = module(
        [config_resource("aws_subnet.s", {"vpc_id": refs("var.vpc")})],
        variables={"vpc": {}},
        outputs={"subnet": {"expression": refs("aws_subnet.s.id")}},
    )
    outer = module(
        [],
        calls={"inner": call("./inner", inner, expressions={"vpc": refs("var.vpc")})},
        variables={"vpc": {}},
        outputs={"subnet": {"expression": refs("module.inner.subnet")}},
    )
    section = configuration(
        module(
            [
                config_resource("aws_vpc.v"),
                config_resource("aws_iam_role.r"),
                config_resource(
                    "aws_instance.i",
                    {"network": [{"subnet_id": refs("module.net.subnet")}]},
                    count_expression=refs("aws_vpc.v.id"),
                ),
                config_resource("aws_s3_bucket.all", depends_on=["module.net"]),
            ],
            calls={
                "net": call(
                    "./net",
                    outer,
                    expressions={"vpc": refs("aws_vpc.v.id")},
                    depends_on=["aws_iam_role.r"],
                    for_each_expression={"constant_value": {}},
                )
            },
        )
    )
    found = parse_configuration(section)
    assert [(m.key, m.parent, m.expansion) for m in found.modules] == [
        ("module.net", "", "for_each"),
        ("module.net.module.inner", "module.net", None),
    ]
    got = {(r.source, r.target, r.reason, r.attributes) for r in found.references}
    assert got == {
        (
            "aws_instance.i",
            SUBNET,
            IMPLICIT,
            ("network.subnet_id",),
        ),
        ("aws_instance.i", "aws_vpc.v", IMPLICIT, ("count",)),
        (SUBNET, "aws_vpc.v", IMPLICIT, ("vpc_id",)),
        (SUBNET, "aws_iam_role.r", EXPLICIT, ()),
        ("aws_s3_bucket.all", SUBNET, EXPLICIT, ()),
    }


def test_the_hash_follows_the_content_only() -> None:
    one, two = network(), network()
    two["root_module"]["resources"].reverse()
    two["root_module"]["variables"]["password"]["default"] = "another"
    assert parse_configuration(one).hash == parse_configuration(two).hash
    two["root_module"]["module_calls"]["box"]["version_constraint"] = "~> 5.0"
    assert parse_configuration(one).hash != parse_configuration(two).hash


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda c: c.update(extra=1), "unknown key 'extra'"),
        (lambda c: c["root_module"]["resources"][0].update(mode="other"), "unknown mode"),
        (lambda c: c["root_module"]["resources"].append(c["root_module"]["resources"][0]), "twice"),
        (lambda c: c["root_module"]["module_calls"]["box"].pop("source"), "expected a string"),
        (lambda c: c["root_module"].update(resources={"a": 1}), "expected a list"),
        (lambda c: c["root_module"]["resources"][0].update(type="t" * 2000), "longer than"),
        (lambda c: c.pop("root_module"), "no root_module"),
    ],
)
def test_refusals(change: Any, reason: str) -> None:
    section = network()
    change(section)
    with pytest.raises(BadInput, match=reason):
        parse_configuration(section)


def test_a_plan_without_a_configuration_is_refused() -> None:
    with pytest.raises(BadInput, match="no `configuration`"):
        required_configuration({"format_version": "1.2"})
    with pytest.raises(BadInput, match="JSON object"):
        required_configuration([])


@given(
    steps=st.lists(st.tuples(names, st.one_of(st.none(), keys)), min_size=1, max_size=4),
    leaf=st.tuples(names, names, st.one_of(st.none(), keys)),
)
def test_config_address_drops_instance_keys(
    steps: list[tuple[str, str | None]], leaf: tuple[str, str, str | None]
) -> None:
    with_keys = "".join(f"module.{n}" + (f"[{k}]" if k else "") + "." for n, k in steps)
    without = "".join(f"module.{n}." for n, _ in steps)
    rtype, name, key = leaf
    address = f"{with_keys}{rtype}.{name}" + (f"[{key}]" if key else "")
    assert config_address(address) == f"{without}{rtype}.{name}"


json_leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=6)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=20,
)


@given(json_value)
def test_any_json_is_read_or_refused(section: Any) -> None:
    with contextlib.suppress(BadInput):
        parse_configuration(section)


@given(
    resources=st.lists(st.tuples(names, names), min_size=1, max_size=6, unique=True),
    picks=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.booleans()), max_size=12),
    secret=st.text(min_size=8, max_size=12).map(lambda s: f"SECRET-{s}"),
)
def test_references_name_resources_and_no_value_is_kept(
    resources: list[tuple[str, str]], picks: list[tuple[int, int, bool]], secret: str
) -> None:
    addresses = [f"{t}.{n}" for t, n in resources]
    expressions: dict[str, dict[str, Any]] = {
        a: {"v": {"constant_value": secret}} for a in addresses
    }
    depends: dict[str, list[str]] = {a: [] for a in addresses}
    for source, target, explicit in picks:
        s, t = addresses[source % len(addresses)], addresses[target % len(addresses)]
        if explicit:
            depends[s].append(t)
        else:
            expressions[s][f"a{target}"] = refs(f"{t}.id")
    section = configuration(
        module(
            [config_resource(a, expressions[a], depends_on=depends[a]) for a in addresses],
            variables={"p": {"default": secret, "sensitive": True}},
        )
    )
    found = parse_configuration(section)
    assert secret not in json.dumps(found.document())
    for r in found.references:
        assert r.source in addresses and r.target in addresses and r.source != r.target
        assert (r.reason == EXPLICIT) == (r.target in depends[r.source] and not r.attributes)
