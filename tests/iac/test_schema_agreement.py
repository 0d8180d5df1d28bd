"""Documents and the catalog take the same fields and the same values, kind by kind: both
read app/catalog/kinds.py, and this holds them to it through their real entry points
(`parse_document` and the catalog's `validate`)."""

import uuid
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.catalog.kinds import RESOURCE_KINDS, validate
from app.catalog.schema import REF
from app.errors import BadInput
from app.iac.document import parse_document
from app.iac.model import DocumentError
from app.iac.rules import IDENTITY_KINDS
from tests.helpers.iac import ENVELOPE, FIELDS, HEADER, VALUES, document_accepts

TABLE_ID = str(uuid.uuid4())
# Fields whose document form names resources by ref where the API takes an ID.
REFERENCES = {
    ("column", "options"),
    ("view", "columns"),
    ("insight_selection", "tables"),
    ("public_read", "view"),
}
OPTION_KEYS = {"target": "table", "table": "table_by_ref"}
# Worded differently in each (the document's wording is fixed by iac.md), same values.
WORDED = {("table", "settings")}


def _id_of(ref: Any, kind: str, name: str) -> Any:
    """The ID the API takes where a document names `ref` (a bad ref maps to a bad ID)."""
    if not isinstance(ref, str):
        return ref
    if not REF.fullmatch(ref):
        return ""
    return f"{TABLE_ID}:col_{ref}" if (kind, name) == ("view", "columns") else TABLE_ID


def live_form(kind: str, name: str, value: Any) -> Any:
    """`value` as the catalog API would be given it."""
    if (kind, name) not in REFERENCES:
        return value
    if name == "options":
        if not isinstance(value, dict):
            return value
        # target (a ref) is the API's table (an ID); a document's `table` is unknown to both
        live = {OPTION_KEYS.get(k, k): v for k, v in value.items()}
        if "target" in value:
            live["table"] = _id_of(value["target"], kind, name)
        return live
    if isinstance(value, list):
        return [_id_of(item, kind, name) for item in value]
    return _id_of(value, kind, name)


def catalog_accepts(kind: str, name: str, value: Any) -> bool:
    try:
        validate(RESOURCE_KINDS[kind], {name: value}, partial=True)
    except BadInput:
        return False
    return True


def test_the_fields_with_two_forms_are_those_this_test_translates() -> None:
    two_forms = {
        (kind, name)
        for kind, k in RESOURCE_KINDS.items()
        for name, field in k.fields.items()
        if field.authored_type is not None
    }
    assert two_forms == REFERENCES | WORDED


ENVELOPE_FIELDS = {"kind", "state", "table", "ref", "renamed_from", "spec"}


def document_fields(kind: str) -> set[str]:
    """The fields a document names as allowed, when given an unknown one."""
    line: dict[str, Any] = {"kind": kind, **ENVELOPE[kind]}
    if kind in IDENTITY_KINDS:
        line["colour"] = "red"
    else:
        line["spec"] = {"colour": "red"}
    with pytest.raises(DocumentError) as caught:
        parse_document(orjson.dumps(HEADER) + b"\n" + orjson.dumps(line))
    [error] = caught.value.errors
    allowed = error.message.partition("(allowed: ")[2].rstrip(")").split(", ")
    return set(allowed) - ENVELOPE_FIELDS


@pytest.mark.parametrize("kind", sorted(RESOURCE_KINDS))
def test_a_document_takes_exactly_the_catalog_fields(kind: str) -> None:
    # a public read's catalog field `ref` is its line's ref (the envelope)
    assert document_fields(kind) == set(RESOURCE_KINDS[kind].fields) - {"ref"}
    with pytest.raises(BadInput, match="unknown"):
        validate(RESOURCE_KINDS[kind], {"colour": "red"}, partial=True)


@settings(max_examples=3000, deadline=None)
@given(st.sampled_from(FIELDS), VALUES)
@pytest.mark.slow
def test_document_and_catalog_accept_the_same_values(field: tuple[str, str], value: Any) -> None:
    kind, name = field
    if kind == "table" and name == "settings" and isinstance(value, dict):
        value.pop("client_access", None)  # its own line kind: a document-only rule (iac.md)
    assert document_accepts(kind, name, value) == catalog_accepts(
        kind, name, live_form(kind, name, value)
    ), (kind, name, value)


@pytest.mark.parametrize(
    ("kind", "name", "value", "accepted"),
    [
        # the two rules the document and the catalog used to disagree on
        ("grant", "principal", "team:sales", True),
        ("grant", "principal", "team sales", False),
        ("public_read", "ref", "directory", True),
        ("public_read", "ref", "dir.main", False),
        ("public_read", "ref", "grant:x", False),
        ("insight_selection", "tables", [], True),
    ],
)
def test_the_former_disagreements(kind: str, name: str, value: Any, accepted: bool) -> None:
    assert document_accepts(kind, name, value) is accepted
    assert catalog_accepts(kind, name, live_form(kind, name, value)) is accepted
