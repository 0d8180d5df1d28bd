"""Addresses sorted as Terraform lists them: module path, data before managed, type and
name, then count indexes numerically and for_each keys as text."""

import random

from hypothesis import given
from hypothesis import strategies as st

from app.tfstate.address import instance_address
from app.tfstate.human_order import address_order, in_terraform_order

names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
texts = st.text(st.characters(exclude_characters='"\\', exclude_categories=("Cs",)), max_size=6)
keys = st.none() | st.integers(0, 500) | texts
modules = st.lists(st.tuples(names, keys), max_size=2)


def _module(path: list[tuple[str, object]]) -> str | None:
    parts = []
    for name, key in path:
        suffix = "" if key is None else f"[{key}]" if isinstance(key, int) else f'["{key}"]'
        parts.append(f"module.{name}{suffix}")
    return ".".join(parts) or None


def _key_tuple(key: object) -> tuple[int, int, str]:
    if key is None:
        return (0, 0, "")
    return (1, key, "") if isinstance(key, int) else (2, 0, str(key))


instances = st.tuples(modules, st.sampled_from(["managed", "data"]), names, names, keys)


def _expected(instance: tuple) -> tuple:
    path, mode, rtype, name, key = instance
    return (
        tuple((n, _key_tuple(k)) for n, k in path),
        0 if mode == "data" else 1,
        rtype,
        name,
        _key_tuple(key),
    )


def _address(instance: tuple) -> str:
    path, mode, rtype, name, key = instance
    return instance_address(_module(path), mode, rtype, name, key, None)


@given(st.lists(instances, max_size=30))
def test_sorting_addresses_orders_their_parts(found: list[tuple]) -> None:
    addresses = [_address(i) for i in found]
    ordered = in_terraform_order(addresses)
    assert [address_order(a)[:5] for a in ordered] == sorted(_expected(i) for i in found)


@given(st.text(max_size=40))
def test_any_text_gets_a_key(text: str) -> None:
    assert address_order(text) == address_order(text)


def test_count_indexes_are_numbers_and_for_each_keys_text() -> None:
    expected = [
        "data.aws_ami.x",
        "aws_subnet.x[0]",
        "aws_subnet.x[1]",
        "aws_subnet.x[2]",
        "aws_subnet.x[10]",
        "aws_subnet.x[11]",
        "aws_subnet.x[100]",
        'aws_subnet.y["a"]',
        'aws_subnet.y["b10"]',
        'aws_subnet.y["b2"]',
        "module.m[2].aws_instance.w",
        "module.m[10].aws_instance.w",
        'module.n["k"].aws_instance.w[0]',
    ]
    shuffled = expected[:]
    random.Random(1).shuffle(shuffled)
    assert in_terraform_order(shuffled) == expected
