"""Parsing, validation and rendering of Terraform v4 states: pure, no database."""

import json

import pytest
from hypothesis import given, settings

from app.tfstate import StateError, parse_state, render_state
from app.tfstate.address import instance_address, resource_key
from tests.helpers.corpus import corpus_files
from tests.helpers.strategies import states
from tests.helpers.tfstate import BAD_INPUT


def round_trip(body: bytes) -> dict:
    state = parse_state(body)
    return render_state(
        serial=state.serial,
        lineage=state.lineage,
        terraform_version=state.terraform_version,
        instances=state.instances,
        outputs=state.outputs,
        extra=state.extra,
        omitted=state.omitted,
    )


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_corpus_file_renders_back_equal(path) -> None:
    body = path.read_bytes()
    assert round_trip(body) == json.loads(body)


@given(states())
@settings(max_examples=200, deadline=None)
@pytest.mark.slow
def test_generated_states_render_back_equal(state) -> None:
    body = json.dumps(state).encode()
    assert round_trip(body) == json.loads(body)


def test_big_integers_keep_their_exact_value() -> None:
    body = (
        b'{"version": 4, "serial": 1, "lineage": "L",'
        b' "outputs": {"n": {"value": 123456789012345678901234567890}}}'
    )
    assert round_trip(body)["outputs"]["n"]["value"] == 123456789012345678901234567890


@pytest.mark.parametrize(
    ("module", "mode", "index_key", "deposed", "expected"),
    [
        (None, "managed", None, None, "aws_instance.web"),
        ("module.a", "managed", 0, None, "module.a.aws_instance.web[0]"),
        (None, "managed", "logs", None, 'aws_instance.web["logs"]'),
        (None, "data", None, None, "data.aws_instance.web"),
        (
            'module.m["x"]',
            "managed",
            1,
            "0000abcd",
            'module.m["x"].aws_instance.web[1] (deposed object 0000abcd)',
        ),
    ],
)
def test_addresses_are_printed_as_terraform_prints_them(
    module, mode, index_key, deposed, expected
) -> None:
    assert instance_address(module, mode, "aws_instance", "web", index_key, deposed) == expected


def test_dependency_keys_drop_module_instance_keys() -> None:
    assert (
        resource_key('module.a["x"].module.b[0]', "data", "t", "n") == "module.a.module.b.data.t.n"
    )


@pytest.mark.parametrize(("body", "message"), BAD_INPUT)
def test_bad_input_is_refused_with_a_clear_message(body: bytes, message: str) -> None:
    with pytest.raises(StateError, match=message):
        parse_state(body)
