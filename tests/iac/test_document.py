"""IaC document parsing: one failing document per rule, a full valid document,
fuzzing (only DocumentError ever escapes), and generated 100,000-line documents."""

import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.iac.document import parse_document
from app.iac.model import DocumentError, LineError, RecordLine, qualify
from tests.helpers.iac import CHATROOM, FULL, HEADER, record

TABLE = {"kind": "table", "ref": "contacts", "spec": {"name": "Contacts"}}
EMAIL = {"kind": "column", "table": "contacts", "ref": "email", "spec": {"type": "text"}}

Line = dict[str, Any] | bytes


def document(*lines: Line, header: bool = True) -> bytes:
    """A document from dicts (serialized) and raw bytes (verbatim), header first."""
    rows = [HEADER, *lines] if header else list(lines)
    return b"\n".join(row if isinstance(row, bytes) else orjson.dumps(row) for row in rows) + b"\n"


def errors(*lines: Line, header: bool = True, **options: Any) -> list[str]:
    with pytest.raises(DocumentError) as caught:
        parse_document(document(*lines, header=header), **options)
    return [str(error) for error in caught.value.errors]


def error(*lines: Line, **options: Any) -> str:
    """The one error of a document that must have exactly one."""
    found = errors(*lines, **options)
    assert len(found) == 1, found
    return found[0]


# --- encoding, size, framing -------------------------------------------------------


def test_invalid_utf8_names_the_line() -> None:
    assert error(TABLE, b'{"kind": "table", "ref": "x\xff"}') == "line 3: not valid UTF-8 (byte 28)"


def test_line_that_is_not_json() -> None:
    assert error(TABLE, b'{"kind": "table",').startswith("line 3: not valid JSON: ")


@pytest.mark.parametrize(
    ("raw", "name"), [(b"[1, 2]", "array"), (b'"x"', "string"), (b"7", "integer")]
)
def test_line_that_is_not_an_object(raw: bytes, name: str) -> None:
    assert error(raw) == f"line 2: a line must be a JSON object, got {name}"


def test_blank_lines_are_ignored_but_counted() -> None:
    data = document(b"", TABLE, b"   \r", b'{"kind": "table", "ref": "Bad", "spec": {}}')
    with pytest.raises(DocumentError) as caught:
        parse_document(data)
    [only] = caught.value.errors
    assert (only.line, only.kind, only.ref) == (5, "table", "Bad")
    assert str(only) == 'line 5 (table Bad): ref "Bad" must match [a-z][a-z0-9_]{0,127}'


def test_crlf_and_bom_are_tolerated() -> None:
    data = b"\xef\xbb\xbf" + document(TABLE).replace(b"\n", b"\r\n")
    assert parse_document(data).lines[0].qualified_ref == "contacts"


def test_document_over_max_bytes_is_rejected_before_parsing() -> None:
    data = document(TABLE) + b"not json at all"
    with pytest.raises(DocumentError) as caught:
        parse_document(data, max_bytes=10)
    [only] = caught.value.errors
    assert only.line == 0
    assert str(only) == f"document: document is {len(data)} bytes, over the 10 limit"


def test_empty_document() -> None:
    assert errors(header=False) == ["document: document is empty: expected a header line"]


def test_integers_past_64_bits_keep_their_value() -> None:
    big = 2**70 + 1
    column = {"kind": "column", "table": "contacts", "ref": "n", "spec": {"type": "number"}}
    record = b'{"kind": "record", "table": "contacts", "key": {"n": %d}}' % big
    parsed = parse_document(document(TABLE, column, record))
    assert parsed.records[0].values == {"n": big}


def test_only_lines_with_long_digit_runs_take_the_exact_parser() -> None:
    """orjson and the stdlib word errors differently: each line keeps its own parser."""
    column = {"kind": "column", "table": "contacts", "ref": "n", "spec": {"type": "number"}}
    big = b'{"kind": "record", "table": "contacts", "key": {"n": %d}}' % 2**64
    cut = b'{"kind": "table",'
    assert errors(TABLE, column, big, cut, cut + b' "n": 12345678901234567890,') == [
        "line 5: not valid JSON: unexpected end of data: line 1 column 18 (char 17)",
        "line 6: not valid JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 45 (char 44)",
    ]


# --- header -----------------------------------------------------------------------


def test_header_must_be_first() -> None:
    found = errors(TABLE, HEADER, header=False)
    assert found == [
        'line 1 (table contacts): the first line must be the header: {"kind": "header", '
        '"system": ..., "version": 1}',
        "line 2 (header): the header must be the first line and appear once",
    ]


def test_exactly_one_header() -> None:
    assert error(TABLE, HEADER) == (
        "line 3 (header): the header must be the first line and appear once "
        "(the header is on line 1)"
    )


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ({"kind": "header", "version": 1}, "missing field system"),
        ({"kind": "header", "system": "CRM", "version": 1}, 'system "CRM" must match'),
        ({"kind": "header", "system": "crm", "version": 2}, "version must be 1, got 2"),
        ({"kind": "header", "system": "crm", "version": True}, "version must be 1, got true"),
        ({"kind": "header", "system": "crm"}, "missing field version"),
        ({**HEADER, "owner": "x"}, "unknown field owner (allowed: kind, system, version)"),
    ],
)
def test_header_fields(header: dict[str, Any], message: str) -> None:
    found = error(header, TABLE, header=False)
    assert found.startswith(f"line 1 (header): {message}")


# --- kinds, refs, unknown fields ---------------------------------------------------


def test_unknown_kind() -> None:
    assert error({"kind": "index", "ref": "x"}) == (
        'line 2: unknown kind "index" (expected one of header, table, column, rule, trigger, '
        "view, grant, client_access, command, insight_selection, public_read, record)"
    )


def test_missing_kind() -> None:
    assert error({"ref": "x"}).startswith("line 2: missing field kind (expected one of")


def test_unknown_top_level_field() -> None:
    line = {**EMAIL, "description": "x"}
    assert error(TABLE, line) == (
        "line 3 (column contacts.email): unknown field description "
        "(allowed: kind, ref, renamed_from, spec, state, table)"
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"kind": "table", "ref": "2fa", "spec": {}}, 'line 3 (table 2fa): ref "2fa" must match'),
        (
            {"kind": "column", "table": "contacts", "ref": "e-mail", "spec": {}},
            'line 3 (column contacts.e-mail): ref "e-mail" must match [a-z][a-z0-9_]{0,127}',
        ),
        (
            {"kind": "command", "ref": "Sync", "spec": {}},
            'ref "Sync" must match [a-z][a-z0-9_-]{0,127}',
        ),
        ({"kind": "column", "table": "contacts", "spec": {}}, "missing field ref"),
        ({"kind": "column", "ref": "email", "spec": {}}, "(column email): missing field table"),
        (
            {"kind": "table", "ref": 3, "spec": {}},
            "line 3 (table): ref must be a string, got integer",
        ),
    ],
)
def test_ref_rules(line: dict[str, Any], message: str) -> None:
    assert message in "\n".join(errors(TABLE, line))


def test_command_refs_may_contain_dashes() -> None:
    parsed = parse_document(document({"kind": "command", "ref": "sync-now", "spec": {}}))
    assert parsed.lines[0].qualified_ref == "command:sync-now"


# --- one ref space per table, document-wide duplicates ------------------------------


def test_view_and_column_share_the_table_ref_space() -> None:
    view = {"kind": "view", "table": "contacts", "ref": "email", "spec": {}}
    assert error(TABLE, EMAIL, view) == (
        "line 4 (view contacts.email): contacts.email is already declared by the column on "
        "line 3 (these kinds share one ref space per table)"
    )


def test_client_access_claims_its_fixed_ref() -> None:
    access = {"kind": "client_access", "table": "contacts", "spec": {}}
    assert error(TABLE, access, access) == (
        "line 4 (client_access contacts.client_access): contacts.client_access is already "
        "declared by the client_access on line 3"
    )
    column = {**EMAIL, "ref": "client_access"}
    assert error(TABLE, column) == (
        "line 3 (column contacts.client_access): ref client_access is reserved for the "
        "table's client_access line"
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (TABLE, "line 3 (table contacts): contacts is already declared by the table on line 2"),
        (
            {"kind": "command", "ref": "sync", "spec": {}},
            "line 3 (command command:sync): command:sync is already declared by the command "
            "on line 2",
        ),
        (
            {"kind": "insight_selection", "chatroom": CHATROOM, "tables": ["contacts"]},
            f"line 3 (insight_selection insight.{CHATROOM}): insight.{CHATROOM} is already "
            "declared by the insight_selection on line 2",
        ),
    ],
)
def test_document_wide_duplicates(line: dict[str, Any], message: str) -> None:
    second = dict(line)
    if "chatroom" in second:
        second["chatroom"] = CHATROOM.upper()  # one chatroom, however it is spelled
    found = errors(line, second, *([] if line is TABLE else [TABLE]))
    assert found == [message]


def test_same_ref_in_two_tables_is_fine() -> None:
    other = {"kind": "table", "ref": "leads", "spec": {}}
    parsed = parse_document(document(TABLE, other, EMAIL, {**EMAIL, "table": "leads"}))
    assert [line.qualified_ref for line in parsed.lines] == [
        "contacts",
        "leads",
        "contacts.email",
        "leads.email",
    ]


# --- tables: declared, undeclared, strict --------------------------------------------


def test_undeclared_tables_are_reported_not_rejected() -> None:
    insight = {"kind": "insight_selection", "chatroom": CHATROOM, "tables": ["deals", "contacts"]}
    ref_col = {
        "kind": "column",
        "table": "contacts",
        "ref": "owner",
        "spec": {"type": "reference", "options": {"target": "users"}},
    }
    parsed = parse_document(document(TABLE, {**EMAIL, "table": "leads"}, insight, ref_col))
    assert parsed.undeclared_tables == ("deals", "leads", "users")
    # a table is never derived from a ref by splitting on "."
    assert parsed.lines[2].table is None


def test_strict_tables() -> None:
    line = {**EMAIL, "table": "leads"}
    assert error(line, strict_tables=True) == (
        "line 2 (column leads.email): table leads is not declared in this document "
        "nor already managed"
    )
    parsed = parse_document(document(line), strict_tables=True, known_tables=frozenset({"leads"}))
    assert parsed.undeclared_tables == ("leads",)


def test_present_line_in_an_absent_table() -> None:
    table = {"kind": "table", "ref": "contacts", "state": "absent"}
    assert error(table, EMAIL) == (
        "line 3 (column contacts.email): table contacts is declared absent on line 2"
    )
    absent_column = {"kind": "column", "table": "contacts", "ref": "email", "state": "absent"}
    assert parse_document(document(table, absent_column)).lines[1].absent


# --- state and spec presence --------------------------------------------------------


def test_state_must_be_present_or_absent() -> None:
    assert error({**TABLE, "state": "deleted"}) == (
        'line 2 (table contacts): state must be one of present, absent, got "deleted"'
    )


@pytest.mark.parametrize(
    "line",
    [
        {"kind": "column", "table": "contacts", "ref": "email"},
        {"kind": "rule", "table": "contacts", "ref": "r"},
        {"kind": "trigger", "table": "contacts", "ref": "t"},
        {"kind": "view", "table": "contacts", "ref": "v"},
        {"kind": "grant", "table": "contacts", "principal": "role:sales"},
        {"kind": "client_access", "table": "contacts"},
        {"kind": "command", "ref": "sync"},
    ],
)
def test_absent_lines_carry_no_spec(line: dict[str, Any]) -> None:
    absent = {**line, "state": "absent"}
    parse_document(document(TABLE, absent))
    label = qualify(line["kind"], line.get("ref", line.get("principal")), "contacts")
    assert error(TABLE, {**absent, "spec": {}}) == (
        f"line 3 ({line['kind']} {label}): spec is not allowed with state absent "
        "(only a table may keep one)"
    )
    assert error(TABLE, line) == (
        f"line 3 ({line['kind']} {label}): missing field spec: a present {line['kind']} "
        "needs a spec object"
    )


def test_absent_table_may_keep_its_spec() -> None:
    parsed = parse_document(document({**TABLE, "state": "absent"}))
    assert parsed.lines[0].spec == {"name": "Contacts"}
    assert parsed.lines[0].absent


def test_spec_must_be_an_object() -> None:
    assert error({**TABLE, "spec": None}) == (
        "line 2 (table contacts): spec must be an object, got null"
    )


@pytest.mark.parametrize(
    "line",
    [
        {"kind": "insight_selection", "chatroom": CHATROOM, "tables": ["contacts"], "spec": {}},
        {"kind": "public_read", "table": "contacts", "ref": "dir", "spec": {}},
    ],
)
def test_identity_only_kinds_take_no_spec(line: dict[str, Any]) -> None:
    assert error(TABLE, line).endswith(
        "spec is not allowed: this kind has no spec, only identity fields"
    )


# --- spec fields --------------------------------------------------------------------


@pytest.mark.parametrize("key", ["column_mapping", "iac"])
def test_server_owned_settings(key: str) -> None:
    line = {**TABLE, "spec": {"settings": {key: {}}}}
    with pytest.raises(DocumentError) as caught:
        parse_document(document(line))
    [only] = caught.value.errors
    assert only.message == f"settings.{key} is server-owned and cannot be set via IaC"
    assert (only.line, only.kind, only.ref) == (2, "table", "contacts")


def test_client_access_is_not_a_table_setting() -> None:
    line = {**TABLE, "spec": {"settings": {"client_access": {"enabled": True}}}}
    assert error(line).endswith("declare a client_access line for the table")


def test_system_tags_are_reserved() -> None:
    own = {**TABLE, "spec": {"tags": ["system:crm", "vip"]}}
    parse_document(document(own))
    assert error({**TABLE, "spec": {"tags": ["system:billing"]}}) == (
        'line 2 (table contacts): spec.tags: "system:billing" is reserved for the system '
        "that manages it"
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            {**EMAIL, "spec": {"type": "text", "colour": "red"}},
            "unknown field spec.colour (allowed: default, name, options, required, type, unique)",
        ),
        ({**EMAIL, "spec": {"type": "string"}}, "spec.type must be one of text, number,"),
        ({**EMAIL, "spec": {"required": "yes"}}, "spec.required must be a boolean, got string"),
        ({**EMAIL, "spec": {"name": ""}}, 'spec.name must be a non-empty string, got ""'),
        (
            {**EMAIL, "spec": {"type": "select", "options": {"values": ["a", "a"]}}},
            'spec.options.values lists "a" twice',
        ),
        (
            {**EMAIL, "spec": {"type": "text", "options": {"target": "users"}}},
            "spec.options.target is only for reference columns, not text",
        ),
        (
            {**EMAIL, "spec": {"type": "number", "default": "ten"}},
            "spec.default must be a number value, got string",
        ),
        (
            {**EMAIL, "spec": {"type": "date", "default": "2024-13-01"}},
            'spec.default must be an ISO 8601 date, got "2024-13-01"',
        ),
        (
            {"kind": "rule", "table": "contacts", "ref": "r", "spec": {"severity": "fatal"}},
            'spec.severity must be one of error, warning, info, got "fatal"',
        ),
        (
            {"kind": "trigger", "table": "contacts", "ref": "t", "spec": {"event": "upsert"}},
            'spec.event must be one of insert, update, delete, got "upsert"',
        ),
        (
            {"kind": "trigger", "table": "contacts", "ref": "t", "spec": {"action": "mail"}},
            "spec.action must be an object, got string",
        ),
        (
            {"kind": "view", "table": "contacts", "ref": "v", "spec": {"columns": "email"}},
            "spec.columns must be an array, got string",
        ),
        (
            {
                "kind": "grant",
                "table": "contacts",
                "spec": {"principal": "role:sales", "permissions": ["read", "delete"]},
            },
            'spec.permissions[1] must be one of read, write, admin, got "delete"',
        ),
        (
            {"kind": "client_access", "table": "contacts", "spec": {"rate_limit": 1.5}},
            "spec.rate_limit must be a non-negative integer, got 1.5",
        ),
        (
            {"kind": "client_access", "table": "contacts", "spec": {"enabled": 1}},
            "spec.enabled must be a boolean, got integer",
        ),
        (
            {"kind": "command", "ref": "sync", "spec": {"name": "Sync", "run": "x"}},
            "unknown field spec.run (allowed: action, description, name)",
        ),
    ],
)
def test_spec_fields(line: dict[str, Any], message: str) -> None:
    found = error(TABLE, line)
    assert found.startswith("line 3 (")
    assert message in found


# --- grants, insight selections, public reads --------------------------------------


def test_grant_principal_rules() -> None:
    grant = {"kind": "grant", "table": "contacts", "spec": {"permissions": ["read"]}}
    assert error(TABLE, grant) == (
        "line 3 (grant): missing principal: set spec.principal, or a top-level principal "
        "(required with state absent)"
    )
    both = {**grant, "principal": "role:a", "spec": {"principal": "role:b"}}
    assert error(TABLE, both) == (
        'line 3 (grant contacts.grant:role:a): principal "role:a" and spec.principal '
        '"role:b" differ'
    )
    bad = {**grant, "principal": "role sales"}
    assert 'principal "role sales" must match' in error(TABLE, bad)


def test_insight_selection_rules() -> None:
    base = {"kind": "insight_selection", "chatroom": CHATROOM, "tables": ["contacts"]}
    assert error(TABLE, {**base, "chatroom": "room-1"}).endswith(
        'chatroom must be a UUID (8-4-4-4-12 hex digits), got "room-1"'
    )
    missing = {"kind": "insight_selection", "chatroom": CHATROOM}
    assert error(TABLE, missing).endswith(
        "missing field tables: a present insight_selection lists its tables"
    )
    # none selected yet: the catalog holds such a selection, so a document can say it
    [_, empty] = parse_document(document(TABLE, {**base, "tables": []})).lines
    assert empty.tables == ()
    parse_document(document(TABLE, {**missing, "state": "absent"}))


def test_public_read_view_must_be_a_view() -> None:
    read = {"kind": "public_read", "table": "contacts", "ref": "dir", "view": "email"}
    assert error(TABLE, EMAIL, read) == (
        "line 4 (public_read contacts.dir): contacts.email is declared as a column on line 3, "
        "not a view"
    )


def test_view_columns_follow_renames_and_absence() -> None:
    gone = {"kind": "column", "table": "contacts", "ref": "phone", "state": "absent"}
    view = {"kind": "view", "table": "contacts", "ref": "v", "spec": {"columns": ["phone"]}}
    assert error(TABLE, gone, view) == (
        "line 4 (view contacts.v): column contacts.phone is declared absent on line 3"
    )


# --- renamed_from -------------------------------------------------------------------


def test_renamed_from_rules() -> None:
    moved = {**EMAIL, "ref": "mail", "renamed_from": "email"}
    assert error(TABLE, {**EMAIL, "renamed_from": "email"}) == (
        "line 3 (column contacts.email): renamed_from must differ from ref"
    )
    assert error(TABLE, EMAIL, moved) == (
        "line 4 (column contacts.mail): renamed_from email: contacts.email is still declared "
        "by the column on line 3"
    )
    twice = {**moved, "ref": "mail2"}
    assert error(TABLE, moved, twice) == (
        "line 4 (column contacts.mail2): renamed_from email: contacts.email is already "
        "renamed on line 3"
    )
    assert 'renamed_from "E" must match' in error(TABLE, {**moved, "renamed_from": "E"})
    absent = {"kind": "column", "table": "contacts", "ref": "mail", "state": "absent"}
    assert error(TABLE, {**absent, "renamed_from": "email"}) == (
        "line 3 (column contacts.mail): renamed_from cannot be combined with state absent"
    )
    access = {"kind": "client_access", "table": "contacts", "spec": {}, "renamed_from": "x"}
    assert "unknown field renamed_from" in error(TABLE, access)


def test_old_ref_of_a_rename_cannot_be_used() -> None:
    moved = {**EMAIL, "ref": "mail", "renamed_from": "email"}
    record = {"kind": "record", "table": "contacts", "key": {"email": "a@b.c"}}
    assert error(TABLE, moved, record) == (
        "line 4 (record): column contacts.email was renamed to contacts.mail on line 3"
    )


# --- records ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (record(key={}), "line 4 (record): key must name at least one column"),
        (record(values={"email": "a"}), "line 4 (record): missing field key"),
        (record(key=["email"]), "line 4 (record): key must be an object, got array"),
        (
            record(key={"phone": "1"}),
            "line 4 (record): key.phone: contacts.phone is not a column declared in this document",
        ),
        (
            record(key={"email": "a"}, values={"name": "Ada"}),
            "line 4 (record): values.name: contacts.name is not a column declared in this document",
        ),
        (
            record(key={"email": "a"}, values={"email": "b"}),
            "line 4 (record): key.email and values.email differ",
        ),
        (
            record(key={"email": None}),
            "line 4 (record): key.email must be a string, number or boolean",
        ),
        (
            record(key={"email": "a"}, values={"age": "old"}),
            "line 4 (record): values.age must be a number value, got string",
        ),
        (
            record(key={"email": "a"}, extra=1),
            "line 4 (record): unknown field extra (allowed: key, kind, table, values)",
        ),
        (
            record(table="Contacts", key={"email": "a"}),
            'line 4 (record): table "Contacts" must match [a-z][a-z0-9_]{0,127}',
        ),
    ],
)
def test_record_rules(line: dict[str, Any], message: str) -> None:
    age = {"kind": "column", "table": "contacts", "ref": "age", "spec": {"type": "number"}}
    assert error(TABLE, EMAIL, line, age) == message


def test_duplicate_record_keys() -> None:
    first = record(key={"email": "a"}, values={"email": "a"})
    assert error(TABLE, EMAIL, first, record(key={"email": "a"})) == (
        "line 5 (record): duplicate record: line 4 has the same key"
    )


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ({"n": "a"}, {"n": "a"}, True),
        ({"n": "a"}, {"n": "b"}, False),
        ({"n": "1"}, {"n": 1}, False),
        ({"n": 1}, {"n": True}, False),
        ({"n": 1}, {"n": 1.0}, False),
        ({"n": 1}, {"n": 1}, True),
        ({"n": "a"}, {"m": "a"}, False),
        ({"n": "a", "m": 1}, {"m": 1, "n": "a"}, True),
        ({"n": "a", "m": 1}, {"n": "a"}, False),
    ],
)
def test_record_key_identity(first: dict[str, Any], second: dict[str, Any], same: bool) -> None:
    columns = [{"kind": "column", "table": "contacts", "ref": ref, "spec": {}} for ref in "nm"]
    lines = (TABLE, *columns, record(key=first), record(key=second))
    if same:
        assert error(*lines) == "line 6 (record): duplicate record: line 5 has the same key"
    else:
        assert len(parse_document(document(*lines)).records) == 2


def test_each_record_reports_its_own_column_errors() -> None:
    """Column checks are worked out once per column: every record still gets its errors."""
    born = {"kind": "column", "table": "contacts", "ref": "born", "spec": {"type": "date"}}
    gone = {"kind": "column", "table": "contacts", "ref": "gone", "state": "absent"}
    found = errors(
        TABLE,
        EMAIL,
        born,
        gone,
        record(key={"email": "a"}, values={"born": "2024-02-30", "gone": 1}),
        record(key={"email": "b"}, values={"born": "2024-02-29", "gone": None}),
        record(key={"born": 7}, values={"born": 7}),
    )
    assert found == [
        'line 6 (record): values.born must be an ISO 8601 date, got "2024-02-30"',
        "line 6 (record): column contacts.gone is declared absent on line 5",
        "line 7 (record): column contacts.gone is declared absent on line 5",
        "line 8 (record): key.born must be a date value, got integer",
    ]


def test_record_key_is_merged_into_values() -> None:
    name = {"kind": "column", "table": "contacts", "ref": "name", "spec": {}}
    parsed = parse_document(
        document(
            TABLE,
            EMAIL,
            name,
            record(key={"email": "a"}, values={"name": "Ada"}),
            record(key={"email": "b"}, values={"email": "b", "name": "Bo"}),
            record(key={"email": "c"}),
        )
    )
    assert parsed.records == (
        RecordLine(5, "contacts", {"email": "a"}, {"name": "Ada", "email": "a"}),
        RecordLine(6, "contacts", {"email": "b"}, {"email": "b", "name": "Bo"}),
        RecordLine(7, "contacts", {"email": "c"}, {"email": "c"}),
    )
    assert [list(r.values) for r in parsed.records] == [
        ["name", "email"],
        ["email", "name"],
        ["email"],
    ]
    assert parsed.records[2].values is not parsed.records[2].key


# --- all errors together -----------------------------------------------------------


def test_every_error_is_reported_at_once() -> None:
    with pytest.raises(DocumentError) as caught:
        parse_document(
            document(
                {**TABLE, "spec": {"settings": {"iac": {}, "column_mapping": {}}}},
                {**EMAIL, "spec": {"type": "varchar"}},
                b"{oops",
                {"kind": "view", "table": "contacts", "ref": "email", "spec": {}},
            )
        )
    found = caught.value.errors
    assert [e.line for e in found] == [2, 2, 3, 4, 5]
    assert all(isinstance(e, LineError) for e in found)
    assert str(caught.value).startswith("5 errors in document:\nline 2 (table contacts): ")
    assert caught.value.as_dicts()[0] == {
        "line": 2,
        "kind": "table",
        "ref": "contacts",
        "message": "settings.column_mapping is server-owned and cannot be set via IaC",
    }


# --- a full valid document -----------------------------------------------------------


def test_full_document() -> None:
    parsed = parse_document(document(*FULL), strict_tables=True)
    assert (parsed.system, parsed.version, parsed.undeclared_tables) == ("crm", 1, ())
    assert [(line.line, line.kind, line.qualified_ref) for line in parsed.lines] == [
        (2, "table", "contacts"),
        (3, "table", "people"),
        (4, "table", "legacy"),
        (5, "column", "contacts.email"),
        (6, "column", "contacts.name"),
        (7, "column", "contacts.stage"),
        (8, "column", "contacts.person"),
        (9, "column", "contacts.fax"),
        (10, "rule", "contacts.has_email"),
        (11, "rule", "contacts.old_rule"),
        (12, "trigger", "contacts.notify"),
        (13, "view", "contacts.active"),
        (14, "grant", "contacts.grant:role:sales"),
        (15, "grant", "contacts.grant:user:ada.l-1"),
        (16, "client_access", "contacts.client_access"),
        (17, "command", "command:sync-all"),
        (18, "insight_selection", f"insight.{CHATROOM}"),
        (19, "public_read", "contacts.directory"),
        (20, "public_read", "contacts.everyone"),
    ]
    by_ref = {line.qualified_ref: line for line in parsed.lines}
    assert by_ref["people"].previous_qualified_ref == "persons"
    assert by_ref["contacts.name"].previous_qualified_ref == "contacts.full_name"
    assert by_ref["legacy"].absent and by_ref["legacy"].spec == {"name": "Legacy"}
    assert by_ref["contacts.fax"].spec is None
    assert by_ref["contacts.grant:role:sales"].ref == "role:sales"
    assert by_ref["contacts.client_access"].ref is None
    assert by_ref["contacts.client_access"].table == "contacts"
    assert by_ref["command:sync-all"].table is None
    insight = by_ref[f"insight.{CHATROOM}"]
    assert (insight.ref, insight.chatroom, insight.tables) == (
        CHATROOM,
        CHATROOM,
        ("contacts", "people"),
    )
    assert insight.table is None
    assert by_ref["contacts.directory"].view == "active"
    assert by_ref["contacts.everyone"].view is None
    assert [(r.line, r.values) for r in parsed.records] == [
        (21, {"name": "Ada", "stage": "won", "email": "a@example.com"}),
        (22, {"email": "b@example.com"}),
    ]


# --- fuzzing ------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(["contacts", "email", "present", "absent", "text", CHATROOM]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def dump(value: Any) -> bytes:
    """Serialize like a careless writer: big integers, NaN and Infinity included."""
    return json.dumps(value).encode()


FIELDS = ["kind", "ref", "table", "state", "spec", "renamed_from", "key", "values", "principal"]
SPEC_FIELDS = ["name", "type", "options", "default", "settings", "tags", "columns", "principal"]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A valid line with fields (top-level or in its spec) removed, replaced or added."""
    line = orjson.loads(orjson.dumps(draw(st.sampled_from([HEADER, TABLE, EMAIL, *FULL]))))
    for _ in range(draw(st.integers(0, 3))):
        target = (
            line["spec"] if isinstance(line.get("spec"), dict) and draw(st.booleans()) else line
        )
        names = SPEC_FIELDS if target is not line else FIELDS
        if draw(st.booleans()) and target:
            target.pop(draw(st.sampled_from(sorted(target))))
        else:
            target[draw(st.sampled_from(names) | st.text(max_size=5))] = draw(json_values)
    return dump(line)


raw_lines = st.one_of(
    st.sampled_from([HEADER, TABLE, EMAIL, *FULL]).map(orjson.dumps),
    mutated(),
    json_values.map(dump),
    st.binary(max_size=40),
    st.just(b""),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.booleans(), st.lists(raw_lines, max_size=25))
def test_fuzz_only_document_errors_escape(with_header: bool, lines: list[bytes]) -> None:
    data = b"\n".join([orjson.dumps(HEADER)] * with_header + lines)
    try:
        parsed = parse_document(data)
    except DocumentError as exc:
        assert exc.errors
        for found in exc.errors:
            assert isinstance(found, LineError)
            assert type(found.line) is int
            assert found.line >= 1 or found.message.startswith("document is")
            assert isinstance(str(found), str)
    else:
        assert parsed.system == "crm"


# --- scale --------------------------------------------------------------------------


COLUMN_SPECS: dict[str, dict[str, Any]] = {
    "title": {"name": "Title", "type": "text", "required": True, "unique": True},
    "amount": {"type": "number", "default": 0},
    "done": {"type": "boolean"},
    "due": {"type": "date"},
    "seen": {"type": "datetime"},
    "stage": {"type": "select", "options": {"values": ["lead", "won", "lost"]}, "default": "lead"},
    "owner": {"type": "reference", "options": {"target": "t0"}},
    "extra": {"type": "json"},
}


def big_rows(tables: int, total_lines: int) -> list[dict[str, Any]]:
    """The lines after the header: `tables` tables with every kind and column type, a few
    scope-level lines, then records (keys and values of every type) up to `total_lines`."""
    refs = [f"t{t}" for t in range(tables)]
    rows: list[dict[str, Any]] = []
    for table in refs:
        rows.append({"kind": "table", "ref": table, "spec": {"name": table, "tags": ["crm"]}})
        rows += [
            {"kind": "column", "table": table, "ref": ref, "spec": spec}
            for ref, spec in COLUMN_SPECS.items()
        ]
        rows += [
            {"kind": "view", "table": table, "ref": "open", "spec": {"columns": ["title", "due"]}},
            {
                "kind": "grant",
                "table": table,
                "spec": {"principal": "role:a", "permissions": ["read"]},
            },
            {"kind": "rule", "table": table, "ref": "titled", "spec": {"expression": "title"}},
            {"kind": "trigger", "table": table, "ref": "notify", "spec": {"event": "insert"}},
            {"kind": "client_access", "table": table, "spec": {"enabled": True}},
            {"kind": "public_read", "table": table, "ref": "board", "view": "open"},
        ]
    rows += [{"kind": "command", "ref": f"sync-{i}", "spec": {"name": "Sync"}} for i in range(10)]
    rows.append({"kind": "insight_selection", "chatroom": CHATROOM, "tables": refs[:3]})
    for r in range(total_lines - 1 - len(rows)):
        values = {
            "amount": r / 4,
            "done": r % 2 == 0,
            "due": f"2024-{r % 12 + 1:02}-{r % 28 + 1:02}",
            "seen": f"2024-01-01T{r % 24:02}:{r % 60:02}:00+00:00",
            "stage": ("lead", "won", "lost", None)[r % 4],
            "owner": f"o{r}",
            "extra": {"n": [r]} if r % 7 == 0 else "x",
        }
        rows.append(record(table=refs[r % tables], key={"title": f"k{r}"}, values=values))
    return rows


@pytest.mark.slow
def test_hundred_thousand_lines() -> None:
    rows = big_rows(300, 100_000)
    records = [row for row in rows if row["kind"] == "record"]
    parsed = parse_document(document(*rows), strict_tables=True)
    assert (len(parsed.lines), len(parsed.records)) == (len(rows) - len(records), len(records))
    assert len(records) > 95_000
    assert parsed.undeclared_tables == ()
    last = parsed.records[-1]
    assert (last.line, last.table, last.key) == (100_000, records[-1]["table"], records[-1]["key"])
    assert last.values == {**records[-1]["values"], **records[-1]["key"]}
    assert [line.qualified_ref for line in parsed.lines[:3]] == ["t0", "t0.title", "t0.amount"]


@pytest.mark.slow
def test_hundred_thousand_lines_with_a_few_errors() -> None:
    rows = big_rows(300, 100_000)
    bad = {
        20_000: {"due": "2024-02-30"},
        50_000: {"stage": "maybe"},
        70_000: {"amount": "12"},
        90_000: {"colour": "red"},
    }
    for index, values in bad.items():
        rows[index] = {**rows[index], "values": {**rows[index]["values"], **values}}
    rows[-1] = {**rows[-1], "key": rows[-2]["key"], "table": rows[-2]["table"]}
    table = rows[90_000]["table"]
    assert errors(*rows) == [
        'line 20002 (record): values.due must be an ISO 8601 date, got "2024-02-30"',
        'line 50002 (record): values.stage "maybe" is not one of the select options.values',
        "line 70002 (record): values.amount must be a number value, got string",
        f"line 90002 (record): values.colour: {table}.colour is not a column declared in "
        "this document",
        "line 100000 (record): duplicate record: line 99999 has the same key",
    ]
