"""IaC documents the tests share: the API's CRM document (its resources' lines), a
full valid document of every kind, and one field's line with the parser's verdict on
it (what the JSON Schema and the catalog are held to)."""

from typing import Any

import orjson
from hypothesis import strategies as st

from app.catalog.kinds import RESOURCE_KINDS
from app.iac.document import parse_document
from app.iac.model import DocumentError
from app.iac.rules import IDENTITY_KINDS
from tests.helpers.crm import CHATROOM

HEADER = {"kind": "header", "system": "crm", "version": 1}

SLUG = "crm-prod"
DOCUMENT = """\
{"kind": "header", "system": "crm", "version": 1}
{"kind": "table", "ref": "contacts", "spec": {"name": "Contacts", "description": "People"}}
{"kind": "column", "table": "contacts", "ref": "email", "spec": {"name": "Email", "type": "text", "required": true}}
{"kind": "column", "table": "contacts", "ref": "age", "spec": {"name": "Age", "type": "number"}}
{"kind": "view", "table": "contacts", "ref": "adults", "spec": {"name": "Adults", "columns": ["email", "age"]}}
{"kind": "record", "table": "contacts", "key": {"email": "ada@example.com"}, "values": {"age": 36}}
{"kind": "record", "table": "contacts", "key": {"email": "alan@example.com"}, "values": {"age": 41}}
"""  # noqa: E501
RESOURCE_LINES = {
    ("table", "contacts"): 2,
    ("column", "contacts.email"): 3,
    ("column", "contacts.age"): 4,
    ("view", "contacts.adults"): 5,
}


def record(**fields: Any) -> dict[str, Any]:
    return {"kind": "record", "table": "contacts", **fields}


FULL = [
    {"kind": "table", "ref": "contacts", "spec": {"name": "Contacts", "tags": ["crm"]}},
    {"kind": "table", "ref": "people", "renamed_from": "persons", "spec": {"name": "People"}},
    {"kind": "table", "ref": "legacy", "state": "absent", "spec": {"name": "Legacy"}},
    {"kind": "column", "table": "contacts", "ref": "email", "spec": {"type": "text"}},
    {"kind": "column", "table": "contacts", "ref": "name", "renamed_from": "full_name", "spec": {}},
    {
        "kind": "column",
        "table": "contacts",
        "ref": "stage",
        "spec": {"type": "select", "options": {"values": ["lead", "won"]}, "default": "lead"},
    },
    {
        "kind": "column",
        "table": "contacts",
        "ref": "person",
        "spec": {"type": "reference", "options": {"target": "people"}},
    },
    {"kind": "column", "table": "contacts", "ref": "fax", "state": "absent"},
    {"kind": "rule", "table": "contacts", "ref": "has_email", "spec": {"expression": "email"}},
    {"kind": "rule", "table": "contacts", "ref": "old_rule", "state": "absent"},
    {"kind": "trigger", "table": "contacts", "ref": "notify", "spec": {"event": "insert"}},
    {"kind": "view", "table": "contacts", "ref": "active", "spec": {"columns": ["email", "name"]}},
    {
        "kind": "grant",
        "table": "contacts",
        "spec": {"principal": "role:sales", "permissions": ["read", "write"]},
    },
    {"kind": "grant", "table": "contacts", "principal": "user:ada.l-1", "state": "absent"},
    {"kind": "client_access", "table": "contacts", "spec": {"enabled": True, "rate_limit": 60}},
    {"kind": "command", "ref": "sync-all", "spec": {"name": "Sync", "action": {"type": "x"}}},
    {"kind": "insight_selection", "chatroom": CHATROOM.upper(), "tables": ["contacts", "people"]},
    {"kind": "public_read", "table": "contacts", "ref": "directory", "view": "active"},
    {"kind": "public_read", "table": "contacts", "ref": "everyone"},
    record(key={"email": "a@example.com"}, values={"name": "Ada", "stage": "won"}),
    record(key={"email": "b@example.com"}),
]


# The document line around one field (its identity when the field is not it).
ENVELOPE: dict[str, dict[str, Any]] = {
    "table": {"ref": "t"},
    "column": {"table": "t", "ref": "c"},
    "rule": {"table": "t", "ref": "r"},
    "trigger": {"table": "t", "ref": "g"},
    "view": {"table": "t", "ref": "v"},
    "grant": {"table": "t", "principal": "p"},
    "client_access": {"table": "t"},
    "command": {"ref": "cmd"},
    "insight_selection": {"chatroom": CHATROOM, "tables": ["t"]},
    "public_read": {"table": "t", "ref": "pr"},
}
FIELDS = sorted((kind, name) for kind, k in RESOURCE_KINDS.items() for name in k.fields)

STRINGS = st.sampled_from(
    [
        *("", " ", "a", "t", "contacts", "Bad", "e-mail", "a.b", "col_x", "team:sales"),
        *("team sales", "role.a-b", CHATROOM, CHATROOM.upper(), "5f0c1d2e3a4b4c5d8e6f708192a3b4c5"),
        *("read", "admin", "delete", "text", "select", "error", "insert", "upsert"),
        *("values", "target", "table", "color", "iac", "column_mapping"),
    ]
)
# Text a line can hold: app.jsonutil.read refuses U+0000 and lone surrogates in any line.
TEXT = st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=3)
SCALARS = st.none() | st.booleans() | st.integers(-2, 3) | st.just(1.5) | STRINGS | TEXT
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(STRINGS, inner, max_size=2),
    max_leaves=6,
)


def line_of(kind: str, name: str, value: Any) -> dict[str, Any]:
    """A document line of `kind` giving `value` to its field `name`."""
    line: dict[str, Any] = {"kind": kind}
    line |= {k: v for k, v in ENVELOPE[kind].items() if k != name}  # a grant's principal
    if kind in IDENTITY_KINDS:
        line[name] = value  # identity fields sit at top level (a public read's ref too)
    else:
        line["spec"] = {name: value}
    return line


def document_accepts(kind: str, name: str, value: Any) -> bool:
    line = line_of(kind, name, value)
    try:
        parse_document(orjson.dumps(HEADER) + b"\n" + orjson.dumps(line))
    except DocumentError:
        return False
    return True
