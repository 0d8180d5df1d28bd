"""A skimmed document gives what a whole scan gives, or says it cannot (NotStreamable);
its digests follow its resources' bytes; a remembered resource is not read."""

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.jsonutil import dumps
from app.tfstate import ScannedState, StateError, parse_body, scan_state
from app.tfstate.skim import SkippedResource, digest, skim_document
from app.tfstate.stream import NotStreamable
from tests.helpers.corpus import corpus_files
from tests.helpers.skim import resources_read
from tests.helpers.strategies import loose_bodies, states
from tests.helpers.tfstate import BAD_INPUT


def _same_as_scan(body: bytes) -> None:
    skimmed, whole = skim_document(body), scan_state(body)
    assert skimmed.head == whole.head
    for _ in range(2):  # each pass reads the resources again
        assert [(i.raw_hash, i.raw) for i in skimmed.instances()] == [
            (i.raw_hash, i.raw) for i in whole.instances()
        ]
    assert len(skimmed.digests) == len(list(whole.resources()))


@settings(max_examples=100, deadline=None)
@given(document=states(), indent=st.booleans())
def test_a_state_skims_as_it_scans_whole(document: dict[str, Any], indent: bool) -> None:
    _same_as_scan(dumps(document, indent=indent))


@settings(max_examples=150, deadline=None)
@given(body=loose_bodies())
def test_any_document_skims_as_it_reads_whole_or_not_at_all(body: bytes) -> None:
    try:
        whole = scan_state(body)
    except StateError as exc:  # then the skim refuses it too, or its rows do
        with pytest.raises((StateError, NotStreamable)):
            list(skim_document(body).resources())
        assert str(exc)
        return
    skimmed = skim_document(body)
    assert skimmed.head == whole.head
    assert list(skimmed.resources()) == list(whole.resources())


def test_every_corpus_file_skims_as_it_scans_whole() -> None:
    for path in corpus_files():
        body = path.read_bytes()
        if not isinstance(parse_body(body), ScannedState):
            with pytest.raises(NotStreamable):  # an OpenTofu envelope: read whole
                skim_document(body)
            continue
        _same_as_scan(body)


@pytest.mark.parametrize(
    "body",
    [
        b'[{"version": 4}]',  # not an object
        b'{"serial": 1, "lineage": "L", "encrypted_data": "x"}',  # no version: an envelope?
        b'{"version": 4, "serial": 1, "lineage": "L", "resources": {}}',  # not a list
        b'{"version": 4, "serial": 1, "lineage": "L", "resources": [1, 2',
        b'{"version": 4, "serial": 1, "lineage": "L", "resources": []} trailing',
        b'{"version": 4, "serial": 1, "lineage": "L", "\\u0000": 1}',
        b'{"version": 4, "serial": 1, "lineage": "L", "x": "\\ud800"}',
        b'{"version": 4, "serial": 1, "lineage": "L", "x": NaN}',
        b"",
        b'{"version": 4, "serial": 1, "lineage": "L", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        b'{"version": 4, "serial": 1, "lineage": "L", "resources": ['
        + b"[" * 5000
        + b"]" * 5000
        + b"]}",
    ],
)
def test_what_the_skim_cannot_take_is_read_whole(body: bytes) -> None:
    with pytest.raises(NotStreamable):
        skim_document(body)


@pytest.mark.parametrize(
    "resource",
    [
        b'["\\u0000"]',
        b'["\\ud800"]',
        b"[" * 130 + b"]" * 130,
        b'["\xff"]',
        b"1e400",
    ],
)
def test_a_resource_a_whole_read_refuses_is_not_taken(resource: bytes) -> None:
    body = b'{"version": 4, "serial": 1, "lineage": "L", "resources": [' + resource + b"]}"
    with pytest.raises(NotStreamable):  # by the skim, or when the resource is read
        list(skim_document(body).resources())


@pytest.mark.parametrize(("body", "message"), BAD_INPUT)
def test_what_a_parse_refuses_the_skim_or_its_rows_refuse(body: bytes, message: str) -> None:
    try:
        seen: set[str] = set()
        for instance in skim_document(body).instances():
            instance.row(seen)
    except StateError as exc:  # what the skim says itself, it says as a parse does
        assert re.search(message, str(exc))
    except NotStreamable:
        pass  # read whole, which says it
    else:
        pytest.fail("taken")


def test_duplicate_members_read_as_a_whole_read_takes_them() -> None:
    body = b'{"version": 4, "serial": 1, "lineage": "A", "lineage": "B", "resources": []}'
    assert skim_document(body).head == scan_state(body).head


def test_digests_follow_the_bytes_of_each_resource() -> None:
    document: dict[str, Any] = {
        "version": 4,
        "serial": 1,
        "lineage": "L",
        "resources": [{"n": 1}, {"n": 2}, {"n": 3}],
    }
    first = skim_document(dumps(document)).digests
    document["resources"][1]["n"] = 5
    second = skim_document(dumps(document)).digests
    assert [a == b for a, b in zip(first, second, strict=True)] == [True, False, True]
    assert first[0] == digest(b'{"n":1}')
    indented = skim_document(dumps(document, indent=True)).digests
    assert indented[0] != first[0]  # other bytes: read again, whatever they parse to


def test_a_remembered_resource_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    document = {"version": 4, "serial": 1, "lineage": "L", "resources": []}
    resources = [
        {
            "mode": "managed",
            "type": "t",
            "name": f"r{n}",
            "provider": "p",
            "instances": [{"attributes": {"n": n}}],
        }
        for n in range(4)
    ]
    skimmed = skim_document(dumps({**document, "resources": resources}))
    read = resources_read(monkeypatch)
    remembered = {skimmed.digests[1]: "one", skimmed.digests[3]: "three"}
    items = list(skimmed.items(remembered))
    assert [item for item in items if isinstance(item, SkippedResource)] == [
        SkippedResource(1, "one"),
        SkippedResource(3, "three"),
    ]
    assert [item.resource.index for item in items if not isinstance(item, SkippedResource)] == [
        0,
        2,
    ]
    assert len(read) == 2  # the two resources not remembered, and no other


_BASE = dumps(
    {
        "version": 4,
        "serial": 2,
        "lineage": "L",
        "outputs": {"o": {"value": [1, "é"], "type": ["tuple", ["number", "string"]]}},
        "resources": [
            {
                "mode": "managed",
                "type": "t",
                "name": "r",
                "provider": "p",
                "instances": [{"attributes": {"id": "a", "n": 1.5, "deep": {"x": [None]}}}],
            }
        ],
        "check_results": None,
    },
    indent=True,
)


@settings(max_examples=400, deadline=None)
@given(
    edits=st.lists(
        st.tuples(st.integers(0, len(_BASE)), st.integers(0, 3), st.binary(max_size=3)),
        min_size=1,
        max_size=3,
    )
)
def test_a_damaged_body_skims_as_it_scans_whole_or_not_at_all(
    edits: list[tuple[int, int, bytes]],
) -> None:
    body = _BASE
    for at, cut, added in edits:
        body = body[:at] + added + body[at + cut :]
    try:
        whole = scan_state(body)
        expected: Any = (whole.head, list(whole.resources()))
    except StateError:
        expected = None
    try:
        skimmed = skim_document(body)
        found: Any = (skimmed.head, list(skimmed.resources()))
    except (StateError, NotStreamable):
        return  # refused, or read whole: what a whole read says is then said
    assert found == expected
