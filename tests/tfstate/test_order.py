"""Rows without positions: documents rebuilt from shared rows, and the row hashes."""

import json
import random

from hypothesis import given
from hypothesis import strategies as st

from app.jsonutil import dumps
from app.tfstate import parse_state
from app.tfstate.digest import instance_digest, output_digest
from app.tfstate.order import in_document_order, layout_of
from app.tfstate.parse import resolve_edges
from tests.helpers.states import resource, state
from tests.helpers.strategies import states


@given(document=states(), seed=st.integers(0, 2**32))
def test_rows_in_any_order_are_placed_as_the_document_had_them(document, seed) -> None:
    rows = parse_state(dumps(document)).instances
    shuffled = list(rows)
    random.Random(seed).shuffle(shuffled)
    assert in_document_order(shuffled, layout_of(rows)) == rows


def test_terraforms_order_needs_no_layout() -> None:
    ordered = [
        resource("aws_instance", "web", keys=[0, 1, 2, 10]),
        resource("aws_vpc", "main"),
        resource("aws_instance", "a", module="module.net", keys=["a", "b"]),
        resource("aws_ami", "x", mode="data", module="module.net"),
    ]
    # root module first, then by module; in one module data before managed, type, name
    ordered[2], ordered[3] = ordered[3], ordered[2]
    rows = parse_state(state(ordered)).instances
    assert layout_of(rows) is None
    unsorted = parse_state(state([ordered[1], ordered[0], *ordered[2:]])).instances
    assert layout_of(unsorted) == [
        ["aws_vpc.main"],
        [f"aws_instance.web[{i}]" for i in (0, 1, 2, 10)],
        ["module.net.data.aws_ami.x"],
        ['module.net.aws_instance.a["a"]', 'module.net.aws_instance.a["b"]'],
    ]


def _one(instance: dict) -> bytes:
    body = state([{**resource("t", "n"), "instances": [instance]}])
    return instance_digest(parse_state(body).instances[0])


def test_a_row_hash_covers_everything_but_the_position() -> None:
    base = {"schema_version": 0, "attributes": {"a": 1}}
    assert _one(base) == _one(dict(base))
    assert _one(base) != _one({**base, "attributes": {"a": 2}})
    assert _one(base) != _one({**base, "dependencies": ["x.y"]})
    assert _one(base) != _one({**base, "zz_future": None})
    # an absent key and a key holding null are different documents
    assert _one({"schema_version": 0}) != _one({"schema_version": 0, "attributes": None})
    assert _one({**base, "attributes": {"big": 2**70}}) != _one(base)
    # the same instance at another place in the document: the same row
    moved = parse_state(state([resource("a", "first"), resource("t", "n", attributes={"a": 1})]))
    assert instance_digest(moved.instances[1]) == _one(base)


def test_an_output_hash_covers_its_value_and_position() -> None:
    outputs = {"a": {"value": 1}, "b": {"value": None}}
    rows = parse_state(state([], outputs=outputs)).outputs
    again = parse_state(state([], outputs=json.loads(json.dumps(outputs)))).outputs
    assert [output_digest(r) for r in rows] == [output_digest(r) for r in again]
    swapped = parse_state(state([], outputs={"b": {"value": None}, "a": {"value": 1}})).outputs
    assert output_digest(rows[0]) != output_digest(swapped[1])  # "a" moved
    assert output_digest(rows[1]) != output_digest(rows[1]._replace(value=2))


@given(document=states(), data=st.data())
def test_the_edges_touching_some_rows_are_those_of_all_edges(document, data) -> None:
    rows = parse_state(dumps(document)).instances
    touching = set(data.draw(st.lists(st.integers(0, max(len(rows) - 1, 0)), max_size=4)))
    touching &= set(range(len(rows)))
    every = resolve_edges(rows)
    assert set(resolve_edges(rows, touching)) == {
        (a, b) for a, b in every if a in touching or b in touching
    }
