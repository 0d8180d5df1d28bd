"""Parsing, validation and rendering of Terraform v4 states: pure, no database."""

import json

import pytest
from hypothesis import given, settings

from app.tfstate import StateError, parse_state, render_state
from app.tfstate.address import instance_address, resource_key
from app.tfstate.parse import MAX_SERIAL
from tests.conftest import corpus_files
from tests.strategies import states


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


def _doc(**changes) -> bytes:
    doc = {
        "version": 4,
        "serial": 1,
        "lineage": "L",
        "resources": [
            {
                "mode": "managed",
                "type": "t",
                "name": "n",
                "provider": "p",
                "instances": [{"attributes": {}}],
            },
        ],
    }
    doc.update(changes)
    return json.dumps(doc).encode()


def _resource(**changes) -> bytes:
    resource = {
        "mode": "managed",
        "type": "t",
        "name": "n",
        "provider": "p",
        "instances": [{"attributes": {}}],
    }
    resource.update(changes)
    return _doc(resources=[resource])


# (a body, what refusing it says): app/tfstate/scan.py's tests refuse them too
BAD_INPUT = [
    (b"{not json", "not valid JSON"),
    (b"[1, 2]", "a state must be a JSON object, got a list"),
    (_doc(version=3), "unsupported state version 3: only version 4 is supported"),
    (b'{"serial": 1, "lineage": "L"}', "missing required field 'version'"),
    (_doc(serial="7"), "state: 'serial' must be an integer, got a string"),
    (_doc(serial=-1), f"state: 'serial' must be between 0 and {MAX_SERIAL}, got -1"),
    (_doc(serial=2**63), "state: 'serial' must be between 0 and"),  # a bigint column
    (
        json.dumps({"version": 4, "serial": 1}).encode(),
        "state: missing required field 'lineage'",
    ),
    (_doc(resources={}), "state: 'resources' must be a list, got an object"),
    (
        _resource(provider=None),
        r"resources\[0\] \(t.n\): 'provider' must be a string, got null",
    ),
    (_resource(type=5), r"resources\[0\]: 'type' must be a string, got an integer"),
    (_resource(mode="weird"), "'mode' must be 'managed' or 'data'"),
    (
        _resource(instances=[{"schema_version": "1"}]),
        r"\(t.n\) instance 0: 'schema_version' must be an integer",
    ),
    (
        _resource(instances=[{"index_key": 0}, {"index_key": 0}]),
        r"duplicate instance address t.n\[0\]",
    ),
    (_resource(instances=[{"dependencies": [1]}]), "'dependencies' must be a list of strings"),
    (_doc(outputs={"o": 1}), "output 'o': must be an object, got an integer"),
    (_doc(outputs={"o": {"value": "a\x00b"}}), r"contains U\+0000"),
]


@pytest.mark.parametrize(("body", "message"), BAD_INPUT)
def test_bad_input_is_refused_with_a_clear_message(body: bytes, message: str) -> None:
    with pytest.raises(StateError, match=message):
        parse_state(body)
