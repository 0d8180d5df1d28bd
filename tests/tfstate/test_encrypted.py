"""OpenTofu's encrypted state envelope: recognised by its exact shape, pure, no database."""

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.tfstate import EncryptedState, EnvelopeError, ScannedState, StateError, parse_body
from app.tfstate.encrypted import ENVELOPE_KEYS
from app.tfstate.parse import MAX_SERIAL
from tests.helpers.backend import tf_state
from tests.helpers.tofu_encryption import altered, tofu


def _envelope(**changes: Any) -> dict[str, Any]:
    """A real envelope of a serial-7 state, altered."""
    return altered(tofu().envelope(tf_state(serial=7, lineage="lineage-7")), changes)


def _body(document: Any) -> bytes:
    return json.dumps(document).encode()


def test_an_envelope_gives_its_clear_serial_and_lineage_and_nothing_else() -> None:
    plain = tf_state(serial=7, lineage="lineage-7")
    body = tofu().encrypt(plain)
    assert tofu().decrypt(body) == plain  # the generator seals what OpenTofu would
    assert parse_body(body) == EncryptedState(serial=7, lineage="lineage-7")


def test_an_envelope_without_clear_fields_has_no_serial_or_lineage() -> None:
    # OpenTofu 1.7.0 pre-releases wrote no serial and lineage beside the ciphertext;
    # Go writes a missing serial as null and a missing lineage as ""
    assert parse_body(_body(_envelope(serial=..., lineage=...))) == EncryptedState(None, None)
    assert parse_body(_body(_envelope(serial=None, lineage=""))) == EncryptedState(None, None)


def test_a_plain_state_is_still_a_state() -> None:
    state = parse_body(tf_state(serial=3))
    assert isinstance(state, ScannedState) and state.serial == 3 and not state.encrypted
    # a v4 state keeps unknown keys, even an envelope's
    state = parse_body(_body({**json.loads(tf_state()), "encrypted_data": "AA=="}))
    assert isinstance(state, ScannedState) and state.extra == {"encrypted_data": "AA=="}


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ({"serial": 1, "lineage": "L"}, "missing required field 'version'"),
        ({"meta": {}, "serial": 1}, "missing required field 'version'"),
        ({"version": 3, "encryption_version": "v0"}, "only version 4"),
    ],
)
def test_other_documents_keep_the_v4_reason(document, reason) -> None:
    with pytest.raises(StateError, match=reason) as raised:
        parse_body(_body(document))
    assert not isinstance(raised.value, EnvelopeError)


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"encrypted_data": ...}, "missing 'encrypted_data' (the ciphertext)"),
        ({"encryption_version": ...}, "missing 'encryption_version'"),
        ({"meta": ...}, "missing 'meta'"),
        ({"encrypted_data": ""}, "'encrypted_data' (the ciphertext) is empty"),
        ({"encrypted_data": 42}, "'encrypted_data' must be a base64 string, got an integer"),
        ({"encrypted_data": None}, "'encrypted_data' must be a base64 string, got null"),
        ({"encrypted_data": "not base64!"}, "'encrypted_data' is not base64"),
        ({"encrypted_data": "QUJD"[:3]}, "'encrypted_data' is not base64"),  # unpadded
        ({"encrypted_data": "QUJDRA==QQ=="}, "'encrypted_data' is not base64"),
        ({"encrypted_data": "QUJDRA-_"}, "'encrypted_data' is not base64"),  # URL alphabet
        ({"encrypted_data": "QUJDRA=é"}, "'encrypted_data' is not base64"),
        ({"encryption_version": "v1"}, "unsupported 'encryption_version' 'v1'"),
        ({"encryption_version": 0}, "'encryption_version' must be a string, got an integer"),
        ({"meta": ["x"]}, "'meta' must be an object, got a list"),
        ({"meta": {"key_provider.pbkdf2.main": {"salt": "x"}}}, "'meta' 'key_provider"),
        ({"meta": {"k": "%%%"}}, "'meta' 'k' is not base64"),
        ({"serial": "7"}, "'serial' must be an integer or null, got a string"),
        ({"serial": True}, "'serial' must be an integer or null, got a boolean"),
        ({"serial": 1.5}, "'serial' must be an integer or null, got a number"),
        ({"serial": -1}, "'serial' must be between 0 and"),
        ({"serial": 2**63}, "'serial' must be between 0 and"),
        ({"lineage": 7}, "'lineage' must be a string, got an integer"),
        ({"resources": []}, "unexpected key 'resources'"),
    ],
)
def test_malformed_envelopes_are_refused_with_the_reason(changes, reason) -> None:
    with pytest.raises(EnvelopeError) as raised:
        parse_body(_body(_envelope(**changes)))
    assert reason in str(raised.value)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=5,
)


@given(
    st.dictionaries(st.sampled_from(ENVELOPE_KEYS), _JSON | st.just(...), max_size=3),
    st.dictionaries(st.text(), _JSON, max_size=2),
)
@settings(max_examples=300, deadline=None)
def test_any_look_alike_is_read_or_refused_with_a_state_error(changes, added) -> None:
    document = {**_envelope(**changes), **added}
    try:
        parsed = parse_body(_body(document))
    except StateError:
        return
    # read as an envelope only when it has exactly the shape
    assert isinstance(parsed, EncryptedState | ScannedState)
    if isinstance(parsed, EncryptedState):
        assert set(document) <= set(ENVELOPE_KEYS)
        assert parsed.serial == document.get("serial")
        assert parsed.lineage == (document.get("lineage") or None)


@given(
    st.none() | st.integers(0, MAX_SERIAL),
    st.none() | st.text(min_size=1),
    st.none() | st.integers(0, MAX_SERIAL),
    st.booleans(),
)
def test_a_version_takes_the_envelopes_numbers_else_numbers_by_arrival(
    serial, lineage, current_serial, same_bytes
) -> None:
    current_lineage = None if current_serial is None else "current"
    envelope = EncryptedState(serial, lineage)
    version = envelope.as_version(current_serial, current_lineage, same_bytes=same_bytes)
    assert version.encrypted
    assert (version.instances, version.outputs, version.edges) == ([], [], [])
    if serial is not None:
        assert version.serial == serial
    elif current_serial is None:
        assert version.serial == 1
    else:
        assert version.serial == current_serial + (0 if same_bytes else 1)
    assert version.lineage == (lineage or current_lineage or "")
