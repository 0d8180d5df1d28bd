"""app.jsonutil.read: the one reader of client JSON, its limits and what it keeps."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.jsonutil import MAX_DEPTH, JsonInputError, dumps, read

LONG = b"12345678901234567890"  # 20 digits: the exact (stdlib) path


def nested(depth: int, leaf: bytes = b"1") -> bytes:
    return (
        b'{"a":' * (depth // 2)
        + b"[" * (depth - depth // 2)
        + leaf
        + b"]" * (depth - depth // 2)
        + b"}" * (depth // 2)
    )


@pytest.mark.parametrize("leaf", [b"1", LONG], ids=["orjson", "exact"])
def test_depth_is_limited_on_both_paths(leaf: bytes) -> None:
    assert read(nested(MAX_DEPTH, leaf)) is not None
    for depth in (MAX_DEPTH + 1, 300, 1_100, 5_000):
        with pytest.raises(JsonInputError, match=f"nested deeper than {MAX_DEPTH}|depth"):
            read(nested(depth, leaf))


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'"\\ud800"', "surrogate"),
        (b'{"k": "\\udfff", "n": ' + LONG + b"}", "surrogate"),
        (b'"a\\u0000b"', "U\\+0000"),
        (b'{"k\\u0000": 1}', "U\\+0000"),
        (b'{"k\\u0000": ' + LONG + b"}", "U\\+0000"),
        (b"NaN", "JSON"),
        (b"[Infinity, " + LONG + b"]", "Infinity"),
        (b"-Infinity", "JSON"),
        (b"1e400", "infinity"),
        (b"[1e400, " + LONG + b"]", "out of range"),
        (b'"\xff"', "UTF-8"),
        (b'["\xc3\x28", ' + LONG + b"]", "UTF-8"),
        (b"{oops", "JSON"),
        (b"", "JSON"),
    ],
)
def test_refused_with_the_reason(body: bytes, reason: str) -> None:
    with pytest.raises(JsonInputError, match=reason):
        read(body)


def test_a_str_holding_a_lone_surrogate_is_refused() -> None:
    with pytest.raises(JsonInputError, match="surrogate"):
        read('"\ud800"')


def test_big_integers_keep_their_value_and_an_escaped_backslash_u0000_is_text() -> None:
    assert read(b'{"n": 123456789012345678901234567890}') == {"n": 123456789012345678901234567890}
    assert read(b'"\\\\u0000"') == "\\u0000"


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_what_it_accepts_writes_back_the_same(value: object) -> None:
    body = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    try:
        parsed = read(body)
    except JsonInputError:
        text = json.dumps(value)
        assert "\\u0000" in text or any(
            0xD800 <= ord(c) <= 0xDFFF for c in json.dumps(value, ensure_ascii=False)
        )
        return
    assert parsed == value
    assert read(dumps(parsed)) == value  # what is stored renders back and reads again
