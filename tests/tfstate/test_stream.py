"""The streamed reader gives what a whole read gives, or says it cannot (NotStreamable)."""

import io
import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.jsonutil import dumps, read
from app.tfstate import stream
from app.tfstate.scan import scan_state, scan_stream
from app.tfstate.stream import NotStreamable, StreamedDocument
from tests.helpers.corpus import corpus_files
from tests.helpers.strategies import loose_bodies, states

_text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"))
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=12,
)


def _read(body: bytes) -> dict[str, Any]:
    """The document as the streamed reader gives it, in one dict."""
    document = StreamedDocument(io.BytesIO(body).read)
    members = dict(document.head)
    resources = list(document.resources())
    tail = document.tail()
    if document.has_resources:
        members["resources"] = resources
    return {**members, **tail}


@pytest.fixture(autouse=True)
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    # values cross window ends all the time, numbers included
    monkeypatch.setattr(stream, "BLOCK", 7)


@settings(max_examples=150, deadline=None)
@given(body=loose_bodies(json_values))
def test_any_document_reads_as_it_reads_whole(body: bytes) -> None:
    assert _read(body) == read(body)


@settings(max_examples=50, deadline=None)
@given(document=states())
def test_a_state_scans_as_it_scans_whole(document: dict[str, Any]) -> None:
    body = dumps(document, indent=True)
    streamed = scan_stream(lambda: io.BytesIO(body).read)
    whole = scan_state(body)
    for _ in range(2):  # a pass reads the file again
        assert [(i.raw_hash, i.raw) for i in streamed.instances()] == [
            (i.raw_hash, i.raw) for i in whole.instances()
        ]
    assert streamed.head == whole.head


def test_every_corpus_file_scans_as_it_scans_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream, "BLOCK", 4096)
    for path in corpus_files():
        body = path.read_bytes()
        try:
            streamed = scan_stream(lambda body=body: io.BytesIO(body).read)
        except NotStreamable:  # an OpenTofu envelope, say: read whole
            continue
        hashes = [i.raw_hash for i in streamed.instances()]
        assert hashes == [i.raw_hash for i in scan_state(body).instances()], path.name
        assert streamed.head == scan_state(body).head, path.name


@pytest.mark.parametrize(
    "body",
    [
        b'[{"version": 4}]',  # not an object
        b'{"version": 4, "resources": [], "serial": 1, "lineage": "L"}',  # serial after
        b'{"version": 4, "serial": 1, "lineage": "L", "resources": {}}',  # not a list
    ],
)
def test_what_the_reader_cannot_stream_is_read_whole(body: bytes) -> None:
    with pytest.raises(NotStreamable):
        _read(body)


@pytest.mark.parametrize(
    "body",
    [
        b'{"version": 4, "serial": 1, "lineage": "L", "resources": [], "resources": []}',
        b'{"version": 4, "serial": 1, "lineage": "L", "resources": [], "outputs": {}}',
        b'{"version": 4, "serial": 1, "lineage": "L", "resources": [{"a": 1} {"b": 2}]}',
        b'{"version": 4, "serial": 1, "lineage": "L", "resources": [NaN]}',
        b'{"version": 4, "serial": 1, "lineage": "L", "resources": [1e400]}',
        b'{"version": 4, "serial": 1, "lineage": "L", "resources": ["\\u0000"]}',
        b'{"version": 4, "serial": 1, "lineage": "L", "resources": ["\\ud800"]}',
        b'{"version": 4, "serial": 1, "lineage": "L", "resources": ['
        + b"[" * 130
        + b"]" * 130
        + b"]}",
        b'{"version": 4, "serial": 1, "lineage": "L", "resources": ["\xff"]}',
        b'{"version": 4, "serial": 1, "lineage": "L", "resources": []} trailing',
        b'{"version": 4, "serial": 1, "lineage": "L", "resources": [1, 2',
    ],
)
def test_what_a_whole_read_refuses_the_reader_does_not_take(body: bytes) -> None:
    with pytest.raises(NotStreamable):
        _read(body)


def test_numbers_past_64_bits_keep_their_value() -> None:
    big = 2**70 + 1
    body = dumps({"version": 4, "serial": 1, "lineage": "L", "resources": [{"n": big}]})
    assert _read(body)["resources"] == [{"n": big}]
    assert json.loads(body)["resources"] == [{"n": big}]
    with pytest.raises(TypeError):
        orjson.dumps(big)  # what the careful path is for
