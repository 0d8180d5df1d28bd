"""app/http.py: the shared request helpers."""

from app.http import declared_length


def test_declared_length_takes_ascii_digits_only() -> None:
    assert declared_length({"content-length": "1024"}) == 1024
    assert declared_length({}) is None
    # "²" is a digit to str.isdigit() and a ValueError to int(): not a length
    for odd in ("²", "١٢", "-1", "1e3", " 12", ""):
        assert declared_length({"content-length": odd}) is None
