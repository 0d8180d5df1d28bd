"""Reading a plan from its bytes (app.plans.document): the same plan and configuration as
the whole document read and parsed, or the same refusal; fuzzed."""

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.configuration.parse import configuration_of
from app.errors import BadInput
from app.jsonutil import JsonInputError, dumps, read
from app.plans.document import read_plan
from app.plans.parse import parse_plan
from tests.helpers.configurations import network, plan_with
from tests.helpers.plans import change, plan

leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6)
)
values = st.recursive(
    leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
sensitivity = st.sampled_from([None, {}, True, {"a": True}, {"s": True}, [True]])
unknowns = st.sampled_from([None, {}, True, {"a": True}, {"true": False}, {"b": [True]}])
actions = st.sampled_from(
    [["no-op"], ["update"], ["create"], ["delete"], ["read"], ["delete", "create"], ["forget"]]
)


@st.composite
def changes(draw: st.DrawFn, n: int) -> dict[str, Any]:
    before = draw(values)
    # as in real plans, most instances are left as they are: the same values
    same = draw(st.booleans())
    after = before if same else draw(values)
    sensitive = draw(sensitivity)
    extra: dict[str, Any] = {}
    if draw(st.booleans()):
        extra["previous_address"] = draw(st.sampled_from(["aws_x.old", None, 3]))
    if draw(st.booleans()):
        extra["importing"] = draw(st.sampled_from([{"id": "x"}, None, "x"]))
    if draw(st.booleans()):
        extra["deposed"] = draw(st.sampled_from(["00000001", None]))
    return change(
        f"aws_x.r{n}",
        draw(actions),
        before,
        after,
        unknown=None if same and draw(st.booleans()) else draw(unknowns),
        before_sensitive=sensitive,
        after_sensitive=sensitive if same else draw(sensitivity),
        **extra,
    )


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.integers(0, 4))
    found = [draw(changes(n)) for n in range(count)]
    prior = {
        f"aws_x.r{n}": draw(st.dictionaries(st.sampled_from(["id", "v"]), values, max_size=2))
        for n in range(draw(st.integers(0, count)))
    }
    outputs = draw(
        st.dictionaries(
            st.sampled_from(["a", "b"]),
            st.fixed_dictionaries(
                {"actions": actions, "before": values, "after": values, "after_unknown": leaf}
            ),
            max_size=2,
        )
    )
    drift = [draw(changes(n)) for n in range(draw(st.integers(0, 1)))]
    document = plan(found, prior=prior, outputs=outputs, drift=drift)
    document["planned_values"] = {"root_module": {"resources": [draw(values)]}}
    if draw(st.booleans()):
        document["prior_state"]["values"]["root_module"]["resources"].append(
            {
                "address": "aws_x.s",
                "mode": "managed",
                "values": {"id": "s"},
                "sensitive_values": True,
            }
        )
    if draw(st.booleans()):
        document.update(plan_with(network()))
        document["format_version"] = "1.2"
    return document


def _whole(raw: bytes) -> Any:
    document = read(raw)
    return parse_plan(document), configuration_of(document)


def _outcome(read_it: Any, raw: bytes) -> Any:
    """What reading `raw` gives: the plan and configuration, or the refusal."""
    try:
        return read_it(raw)
    except (BadInput, JsonInputError) as exc:
        return type(exc), str(exc)


@settings(max_examples=200)
@given(documents(), st.booleans())
def test_a_plan_reads_as_its_whole_document(document: dict[str, Any], spaced: bool) -> None:
    raw = json.dumps(document).encode() if spaced else dumps(document)
    assert _outcome(read_plan, raw) == _outcome(_whole, raw)


def test_the_values_of_unchanged_instances_are_not_parsed() -> None:
    """A plan whose instances are left as they are: parsed, their values would be refused
    (nested past the limit); they are skipped, and so is `planned_values`."""
    deep: Any = "x"
    for _ in range(200):
        deep = [deep]
    document = plan(
        [change("aws_x.a", ["no-op"], {"v": deep}, {"v": deep}), change("aws_x.b", ["update"])],
        prior={"aws_x.a": {"id": "a", "v": deep}},
    )
    document["planned_values"] = {"root_module": {"v": deep}}
    raw = orjson.dumps(document)
    with pytest.raises(JsonInputError, match="nested deeper"):
        read(raw)
    parsed, _ = read_plan(raw)
    assert [(c.address, c.action.name, c.attributes) for c in parsed.changes] == [
        ("aws_x.a", "NO_OP", []),
        ("aws_x.b", "UPDATE", []),
    ]
    assert parsed.prior == {"aws_x.a": {"id": "a"}}
    # a change read is held to the limit, as the whole document is
    document["resource_changes"][1]["change"]["after"] = {"v": deep}
    with pytest.raises(JsonInputError, match="nested deeper"):
        read_plan(orjson.dumps(document))


def _replace(raw: bytes, old: bytes, new: bytes) -> bytes:
    assert old in raw
    return raw.replace(old, new, 1)


GOOD = orjson.dumps(
    plan(
        [change("aws_x.a", ["update"], {"id": "a", "n": 1}, {"id": "a", "n": 2})],
        prior={"aws_x.a": {"id": "a"}},
    )
)
BAD = [
    b"not json",
    GOOD[:-20],
    b"[1]",
    _replace(GOOD, b'"1.2"', b'"2.0"'),
    _replace(GOOD, b'"1.9.8"', b"1" + b"0" * 4999),
    _replace(GOOD, b'"1.9.8"', b"3"),
    _replace(GOOD, b'"n":2', b'"n":"\\u0000"'),
    _replace(GOOD, b'"n":2', b'"n":"\\ud800"'),
    _replace(GOOD, b'"n":2', b'"n":1e999'),
    _replace(GOOD, b'"root_module":{}', b'"root_module":{"x":"\xff"}'),
    _replace(GOOD, b'"root_module":{}', b'"root_module":' + b"[" * 5000 + b"]" * 5000),
    _replace(GOOD, b'["update"]', b'["update","x"]'),
    _replace(GOOD, b'["update"]', b'"update"'),
    _replace(GOOD, b'"address":"aws_x.a","mode"', b'"address":7,"mode"'),
    _replace(GOOD, b'"resource_changes":[', b'"resource_changes":[null,'),
    _replace(GOOD, b'"output_changes":{}', b'"output_changes":7'),
]
# read by both, though msgspec finds them of another shape than it reads
ODD = [
    _replace(GOOD, b'"output_changes":{}', b'"output_changes":[]'),
    _replace(GOOD, b'"values":{"id":"a"}', b'"values":[1]'),
    _replace(GOOD, b'"mode":"managed","values"', b'"mode":"managed","address":3,"values"'),
    _replace(GOOD, b'"resource_changes":[', b'"resource_changes":null,"x":['),
]


@pytest.mark.parametrize("raw", BAD, ids=range(len(BAD)))
def test_refusals_are_those_of_the_whole_document(raw: bytes) -> None:
    refused = _outcome(_whole, raw)
    assert refused == _outcome(read_plan, raw)
    assert isinstance(refused, tuple) and refused[0] in (BadInput, JsonInputError)


@pytest.mark.parametrize("raw", ODD, ids=range(len(ODD)))
def test_documents_of_other_shapes_read_as_the_whole_document(raw: bytes) -> None:
    read_whole = _outcome(_whole, raw)
    assert read_whole == _outcome(read_plan, raw)
    assert not isinstance(read_whole[0], type)


def test_numbers_past_64_bits_are_exact() -> None:
    raw = _replace(GOOD, b'"n":2', b'"n":123456789012345678901234567890')
    parsed, _ = read_plan(raw)
    assert parsed.changes[0].attributes[0].after == 123456789012345678901234567890
    assert (parsed, None) == _whole(raw)
