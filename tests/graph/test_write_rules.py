"""The serial and lineage rules of a write (app/graph/write/rules.py), pure: each
version Terraform may send after the current one against what the rules decide."""

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.errors import Conflict
from app.graph.write.rules import Current, is_retry, numbered
from app.tfstate import EncryptedState, NormalizedState

serials = st.integers(min_value=0, max_value=1 << 40)
lineages = st.sampled_from(["", "a", "b"])
md5s = st.sampled_from([b"1" * 16, b"2" * 16])


def _state(serial: int, lineage: str) -> NormalizedState:
    return NormalizedState(serial, lineage, None, [], [])


def _current(serial: int, lineage: str | None, md5: bytes, empty: bool) -> Current:
    return Current(uuid.uuid4(), serial, lineage, md5, empty)


@given(serials, lineages, md5s)
def test_a_first_version_follows_nothing(serial: int, lineage: str, md5: bytes) -> None:
    assert not is_retry("s", _state(serial, lineage), md5, None)


@given(serials, lineages, st.none() | lineages, md5s, st.booleans())
def test_the_very_same_body_at_the_serial_is_a_retry(
    serial: int, lineage: str, current_lineage: str | None, md5: bytes, empty: bool
) -> None:
    current = _current(serial, current_lineage, md5, empty)
    assert is_retry("s", _state(serial, lineage), md5, current)


@given(serials, serials, lineages, st.none() | lineages, md5s, md5s, st.booleans())
def test_a_version_follows_when_newer_in_the_same_lineage(
    serial: int,
    current_serial: int,
    lineage: str,
    current_lineage: str | None,
    md5: bytes,
    current_md5: bytes,
    empty: bool,
) -> None:
    current = _current(current_serial, current_lineage, current_md5, empty)
    state = _state(serial, lineage)
    same_body = serial == current_serial and md5 == current_md5
    other_lineage = bool(current_lineage) and lineage != current_lineage and not empty
    if same_body:
        assert is_retry("s", state, md5, current)
    elif other_lineage or serial <= current_serial:
        with pytest.raises(Conflict) as refused:
            is_retry("s", state, md5, current)
        key = "current_lineage" if other_lineage else "current_serial"
        assert key in refused.value.detail
    else:
        assert not is_retry("s", state, md5, current)


@given(serials, lineages, md5s, md5s)
def test_an_unnumbered_encrypted_state_is_numbered_by_arrival(
    current_serial: int, current_lineage: str, current_md5: bytes, md5: bytes
) -> None:
    current = _current(current_serial, current_lineage, current_md5, empty=False)
    version = numbered(EncryptedState(None, None), current, md5)
    assert version.encrypted and version.lineage == current_lineage
    if md5 == current_md5:  # the same bytes again: the same version
        assert version.serial == current_serial and is_retry("s", version, md5, current)
    else:
        assert version.serial == current_serial + 1 and not is_retry("s", version, md5, current)
    assert numbered(EncryptedState(None, None), None, md5).serial == 1


def test_a_state_not_encrypted_keeps_its_numbers() -> None:
    state = _state(3, "a")
    assert numbered(state, _current(9, "b", b"1" * 16, empty=False), b"1" * 16) is state
