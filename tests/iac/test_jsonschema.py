"""iac.schema.json: current, and it says what the parser says about each line's fields."""

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from app.iac.jsonschema import SCHEMA_FILE, document_line_schema, schema_text
from tests.helpers.iac import FIELDS, FULL, HEADER, VALUES, document_accepts, line_of

VALIDATOR = Draft202012Validator(document_line_schema())


def test_the_schema_file_matches_the_code() -> None:
    Draft202012Validator.check_schema(document_line_schema())
    assert SCHEMA_FILE.read_text() == schema_text(), (
        "iac.schema.json differs from the rules in the code: "
        "regenerate it with `uv run python -m app.iac.jsonschema` and review the diff"
    )


def test_every_line_of_a_valid_document_fits() -> None:
    for line in [HEADER, *FULL]:
        assert not list(VALIDATOR.iter_errors(line)), line


@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(FIELDS), VALUES)
@pytest.mark.slow
def test_a_field_value_fits_the_schema_when_the_parser_takes_it(
    field: tuple[str, str], value: Any
) -> None:
    kind, name = field
    if kind == "table" and name == "settings" and isinstance(value, dict):
        value.pop("client_access", None)  # a rule of the parser the schema does not carry
    line = line_of(kind, name, value)
    assert VALIDATOR.is_valid(line) == document_accepts(kind, name, value), line
