"""A scan normalizes, instance by instance, to what a parse does, and its raw hashes
change with their resource and only with it."""

import copy
import json

import pytest
from hypothesis import given, settings

from app.jsonutil import dumps
from app.tfstate import StateError, parse_state, scan_state
from app.tfstate.scan import ScannedState
from tests.helpers.corpus import corpus_files
from tests.helpers.strategies import states
from tests.helpers.tfstate import BAD_INPUT


def normalized(scanned: ScannedState) -> list:
    seen: set[str] = set()
    return [instance.row(seen) for instance in scanned.instances()]


def _same_as_parse(body: bytes) -> None:
    scanned, parsed = scan_state(body), parse_state(body)
    assert normalized(scanned) == parsed.instances
    assert (scanned.serial, scanned.lineage, scanned.terraform_version, scanned.outputs) == (
        parsed.serial,
        parsed.lineage,
        parsed.terraform_version,
        parsed.outputs,
    )
    assert (scanned.extra, scanned.omitted) == (parsed.extra, parsed.omitted)
    hashes = [i.raw_hash for i in scanned.instances()]
    assert len(set(hashes)) == len(hashes)


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_a_scanned_corpus_file_normalizes_as_parsed(path) -> None:
    _same_as_parse(path.read_bytes())


@given(states())
@settings(max_examples=100, deadline=None)
def test_a_scanned_generated_state_normalizes_as_parsed(state) -> None:
    _same_as_parse(json.dumps(state).encode())


@pytest.mark.parametrize(("body", "message"), BAD_INPUT)
def test_what_a_parse_refuses_a_scan_and_its_rows_refuse(body: bytes, message: str) -> None:
    with pytest.raises(StateError, match=message):
        normalized(scan_state(body))


def test_a_raw_hash_changes_with_its_resource_only() -> None:
    document = {
        "version": 4,
        "serial": 1,
        "lineage": "L",
        "resources": [
            {
                "mode": "managed",
                "type": "t",
                "name": name,
                "provider": "p",
                "instances": [{"index_key": k, "attributes": {"k": k}} for k in range(3)],
            }
            for name in ("a", "b")
        ],
    }
    before = [i.raw_hash for i in scan_state(dumps(document)).instances()]
    assert before == [i.raw_hash for i in scan_state(dumps(document)).instances()]
    changed = copy.deepcopy(document)
    changed["resources"][1]["instances"][2]["attributes"]["k"] = 9
    after = [i.raw_hash for i in scan_state(dumps(changed)).instances()]
    assert after[:3] == before[:3] and all(
        a != b for a, b in zip(after[3:], before[3:], strict=True)
    )


def test_a_resource_without_instances_is_refused_by_the_scan() -> None:
    document = {"version": 4, "serial": 1, "lineage": "L", "resources": [{"mode": "managed"}]}
    with pytest.raises(StateError, match="missing required field 'type'"):
        list(scan_state(dumps(document)).instances())  # when the write reads it
    instance = {"mode": "managed", "type": "t", "name": "n", "provider": "p", "instances": [1]}
    scanned = scan_state(dumps({**document, "resources": [instance]}))  # an instance's fault
    with pytest.raises(StateError, match="instance 0: must be an object"):
        normalized(scanned)
