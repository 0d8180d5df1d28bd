"""IaC export: the pure document builder on hand-built snapshots (refs reused and
generated, settings stripped, IDs translated, other systems left out, records keyed,
deterministic, always a valid document), then export_scope on a crm scope built
through the catalog API."""

import itertools
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.catalog.kinds import RESOURCE_KINDS, validate
from app.catalog.snapshot import load_scope_snapshot
from app.errors import BadInput, NotFound
from app.iac.document import parse_document
from app.iac.export import export_document, export_scope, generated_ref
from app.iac.state import StateRow, replace_rows
from tests.helpers.crm import CHATROOM, COMPANIES, CONTACTS, build_crm

SCOPE = "00000000-0000-4000-8000-00000000000f"
_serial = itertools.count(1)


def _uuid() -> str:
    return f"00000000-0000-4000-8000-{next(_serial):012d}"


def live(kind: str, parent: str | None = None, **spec: Any) -> dict[str, Any]:
    """A snapshot dict as load_scope_snapshot gives it: the catalog's defaults filled."""
    values = validate(RESOURCE_KINDS[kind], spec, partial=False)
    resource_id = _uuid()
    if kind == "table":
        values["settings"] = {**values["settings"], "column_mapping": {}}
        parent = resource_id
    elif kind == "column":
        values["key"] = f"col_{next(_serial):06d}"
        resource_id = f"{parent}:{values['key']}"
    return {"kind": kind, "id": resource_id, "scope_id": SCOPE, "table_id": parent, **values}


def record(table: dict[str, Any], **by_key: Any) -> dict[str, Any]:
    return {"id": _uuid(), "table_id": table["id"], "values": by_key}


def lines(document: bytes) -> list[dict[str, Any]]:
    """The document's lines, after checking that it is a valid document."""
    parse_document(document)
    return [orjson.loads(line) for line in document.splitlines()]


def export(snapshot, rows=(), records=None, system: str = "crm") -> list[dict[str, Any]]:
    return lines(export_document(system, snapshot, list(rows), records or {}))


def refs_of(exported: list[dict[str, Any]], kind: str) -> list[str]:
    return [
        f"{line['table']}.{line['ref']}" if "table" in line else line["ref"]
        for line in exported
        if line["kind"] == kind
    ]


def row(system: str, resource: dict[str, Any], ref: str) -> StateRow:
    table_id = resource["table_id"] if resource["kind"] != "command" else None
    return StateRow(system, resource["kind"], ref, resource["id"], table_id)


# --- pure: the document -----------------------------------------------------------------


def test_a_whole_scope_exported_with_ids_as_refs_and_server_fields_stripped() -> None:
    companies = live("table", name="Companies", tags=["sales", "system:crm", "system:old"])
    companies["settings"].update(
        {"iac": {"system": "crm"}, "client_access": {"enabled": True}, "color": "red"}
    )
    contacts = live("table", name="Contacts", description="People")
    name = live("column", companies["id"], name="Name", type="text", unique=True)
    email = live("column", contacts["id"], name="Email", type="text", required=True)
    stage = live(
        "column",
        contacts["id"],
        name="Stage",
        type="select",
        default="lead",
        options={"values": ["lead", "customer"]},
    )
    company = live(
        "column",
        contacts["id"],
        name="Company",
        type="reference",
        options={"table": companies["id"]},
    )
    rule = live("rule", contacts["id"], expression="Email != ''")
    trigger = live("trigger", contacts["id"], event="update", condition="Stage = 'customer'")
    view = live("view", contacts["id"], name="By stage", columns=[stage["id"], email["id"]])
    grant = live("grant", contacts["id"], principal="team:sales", permissions=["read"])
    access = live("client_access", contacts["id"], origins=["https://x.test"])
    sync = live("command", SCOPE, name="Sync now", action={"url": "https://x.test"})
    insight = live("insight_selection", SCOPE, chatroom=CHATROOM, tables=[contacts["id"]])
    everyone = live("public_read", contacts["id"], ref="everyone")
    staged = live("public_read", contacts["id"], ref="staged", view=view["id"])
    snapshot = [
        *(companies, contacts, name, email, stage, company, rule, trigger, view),
        *(grant, access, sync, insight, everyone, staged),
    ]
    assert export(snapshot) == [
        {"kind": "header", "system": "crm", "version": 1},
        {
            "kind": "table",
            "ref": "companies",
            "spec": {"name": "Companies", "settings": {"color": "red"}, "tags": ["sales"]},
        },
        {
            "kind": "column",
            "table": "companies",
            "ref": "name",
            "spec": {
                "name": "Name",
                "type": "text",
                "required": False,
                "unique": True,
                "options": {},
            },
        },
        {
            "kind": "table",
            "ref": "contacts",
            "spec": {"name": "Contacts", "description": "People", "settings": {}, "tags": []},
        },
        {
            "kind": "column",
            "table": "contacts",
            "ref": "email",
            "spec": {
                "name": "Email",
                "type": "text",
                "required": True,
                "unique": False,
                "options": {},
            },
        },
        {
            "kind": "column",
            "table": "contacts",
            "ref": "stage",
            "spec": {
                "name": "Stage",
                "type": "select",
                "required": False,
                "unique": False,
                "default": "lead",
                "options": {"values": ["lead", "customer"]},
            },
        },
        {
            "kind": "column",
            "table": "contacts",
            "ref": "company",
            "spec": {
                "name": "Company",
                "type": "reference",
                "required": False,
                "unique": False,
                "options": {"target": "companies"},
            },
        },
        {
            "kind": "rule",
            "table": "contacts",
            "ref": "rule",
            "spec": {"expression": "Email != ''", "severity": "error"},
        },
        {
            "kind": "trigger",
            "table": "contacts",
            "ref": "trigger",
            "spec": {"event": "update", "condition": "Stage = 'customer'", "action": {}},
        },
        {
            "kind": "view",
            "table": "contacts",
            "ref": "by_stage",
            "spec": {"name": "By stage", "columns": ["stage", "email"]},
        },
        {
            "kind": "grant",
            "table": "contacts",
            "principal": "team:sales",
            "spec": {"permissions": ["read"]},
        },
        {
            "kind": "client_access",
            "table": "contacts",
            "spec": {"enabled": True, "origins": ["https://x.test"]},
        },
        {"kind": "public_read", "table": "contacts", "ref": "everyone"},
        {"kind": "public_read", "table": "contacts", "ref": "staged", "view": "by_stage"},
        {
            "kind": "command",
            "ref": "sync_now",
            "spec": {"name": "Sync now", "action": {"url": "https://x.test"}},
        },
        {"kind": "insight_selection", "chatroom": CHATROOM, "tables": ["contacts"]},
    ]


def test_refs_of_this_systems_state_are_reused_and_never_generated_again() -> None:
    contacts = live("table", name="Contacts")
    people = live("table", name="People")
    email = live("column", contacts["id"], name="Email", type="text")
    mail = live("column", contacts["id"], name="Mail", type="text")
    sync = live("command", SCOPE, name="Sync")
    go = live("command", SCOPE, name="Go")
    rows = [
        row("crm", contacts, "people"),
        row("crm", email, "people.mail"),
        row("crm", go, "command:sync"),
        # orphaned: its table is gone, yet its ref stays taken (it would bind a dead ID)
        StateRow("crm", "table", "contacts", _uuid(), None),
        # another system's refs do not matter to this document
        StateRow("billing", "table", "sync", _uuid(), None),
    ]
    exported = export([contacts, people, email, mail, sync, go], rows)
    assert refs_of(exported, "table") == ["people", "people_2"]
    assert refs_of(exported, "column") == ["people.mail", "people.mail_2"]
    assert refs_of(exported, "command") == ["sync_2", "sync"]


def test_a_state_ref_that_no_longer_fits_its_resource_is_replaced() -> None:
    contacts = live("table", name="Contacts")
    email = live("column", contacts["id"], name="Email", type="text")
    view = live("view", contacts["id"], name="Emails", columns=[email["id"]])
    rows = [
        row("crm", contacts, "contacts"),
        row("crm", email, "people.email"),  # under the table's old ref
        # a row of the wrong type (corrupt state) is not the view's ref
        StateRow("crm", "rule", "contacts.emails", view["id"], contacts["id"]),
    ]
    exported = export([contacts, email, view], rows)
    assert refs_of(exported, "column") == ["contacts.email"]
    assert refs_of(exported, "view") == ["contacts.emails_2"]  # the rule's ref stays taken


def test_generated_refs_are_slugs_with_suffixes_on_collision_in_creation_order() -> None:
    tables = [
        live("table", name=name)
        for name in ("Contacts", "contacts", "Contacts!", "2024 Sales", "Café Crème", "联系人")
    ]
    first = tables[0]["id"]
    subs = [
        live("column", first, name="Client Access", type="text"),
        live("column", first, name="Active", type="boolean"),
        live("column", first, name="  Active  ", type="boolean"),
        live("rule", first, expression="a"),
        live("rule", first, expression="b"),
        live("trigger", first, event="delete"),
        live("view", first, name="Active"),
        live("view", first),
        live("public_read", first, ref="dir_main"),
        live("public_read", first, ref="view"),
    ]
    commands = [live("command", SCOPE, name=name) for name in ("Sync", "sync", "42")]
    exported = export([*tables, *subs, *commands])
    assert refs_of(exported, "table") == [
        "contacts",
        "contacts_2",
        "contacts_3",
        "t_2024_sales",
        "cafe_creme",
        "table",
    ]
    assert refs_of(exported, "column") == [
        "contacts.client_access_2",
        "contacts.active",
        "contacts.active_2",
    ]
    assert refs_of(exported, "rule") == ["contacts.rule", "contacts.rule_2"]
    assert refs_of(exported, "trigger") == ["contacts.trigger"]
    # a public read keeps its own ref (its identity): the unnamed view steps aside
    assert refs_of(exported, "view") == ["contacts.active_3", "contacts.view_2"]
    assert refs_of(exported, "public_read") == ["contacts.dir_main", "contacts.view"]
    assert refs_of(exported, "command") == ["sync", "sync_2", "c_42"]


@pytest.mark.parametrize(
    ("kind", "name", "ref"),
    [
        ("table", "Contacts", "contacts"),
        ("table", "  Big -- Deals!! ", "big_deals"),
        ("table", "1st", "t_1st"),
        ("column", "2nd e-mail", "c_2nd_e_mail"),
        ("column", "_x", "x"),
        ("command", "Ünïcödé", "unicode"),
        ("view", "!!!", "view"),
        ("command", "同步", "command"),
    ],
)
def test_generated_ref_of_a_name(kind: str, name: str, ref: str) -> None:
    assert generated_ref(kind, {"name": name}) == ref


def test_resources_of_other_systems_and_whatever_hangs_on_them_are_left_out() -> None:
    contacts = live("table", name="Contacts")
    invoices = live("table", name="Invoices")
    email = live("column", contacts["id"], name="Email", type="text")
    score = live("column", contacts["id"], name="Score", type="number")
    invoice = live(
        "column",
        contacts["id"],
        name="Invoice",
        type="reference",
        options={"table": invoices["id"]},
    )
    amount = live("column", invoices["id"], name="Amount", type="number")
    emails = live("view", contacts["id"], name="Emails", columns=[email["id"]])
    scores = live("view", contacts["id"], name="Scores", columns=[email["id"], score["id"]])
    on_scores = live("public_read", contacts["id"], ref="scores", view=scores["id"])
    on_emails = live("public_read", contacts["id"], ref="emails", view=emails["id"])
    mine = live("insight_selection", SCOPE, chatroom=CHATROOM, tables=[contacts["id"]])
    mixed = live(
        "insight_selection",
        SCOPE,
        chatroom=CHATROOM.replace("5f", "6f"),
        tables=[contacts["id"], invoices["id"]],
    )
    theirs = live("command", SCOPE, name="Bill")
    snapshot = [
        *(contacts, invoices, email, score, invoice, amount, emails, scores),
        *(theirs, mine, mixed, on_scores, on_emails),
    ]
    rows = [row("billing", invoices, "invoices"), row("billing", theirs, "command:bill")]
    rows.append(row("billing", score, "invoices.score"))  # a column of our table: theirs
    records = {
        contacts["id"]: [record(contacts, **{email["key"]: "a@x", score["key"]: 3})],
        invoices["id"]: [record(invoices, **{amount["key"]: 10})],
    }
    exported = export(snapshot, rows, records)
    assert refs_of(exported, "table") == ["contacts"]
    assert refs_of(exported, "column") == ["contacts.email"]
    assert refs_of(exported, "view") == ["contacts.emails_2"]  # the public read keeps its ref
    assert refs_of(exported, "public_read") == ["contacts.emails"]
    assert [line["chatroom"] for line in exported if line["kind"] == "insight_selection"] == [
        CHATROOM
    ]
    assert refs_of(exported, "command") == []
    assert [line for line in exported if line["kind"] == "record"] == [
        {"kind": "record", "table": "contacts", "key": {"email": "a@x"}, "values": {"email": "a@x"}}
    ]
    # Seen by billing: its own resources and the unmanaged ones (ours: none here).
    billing = export(snapshot, rows, records, "billing")
    assert refs_of(billing, "table") == ["contacts", "invoices"]
    assert refs_of(billing, "command") == ["bill"]


def test_values_a_document_cannot_hold_are_left_out() -> None:
    """Rows the catalog took before it checked the document's rules (it refuses them now)."""
    contacts = live("table", name="Contacts", settings={"client_access": {"enabled": False}})
    odd = live("column", contacts["id"], name="Odd", type="text")
    odd["options"] = {"values": ["a"], "table": contacts["id"], "color": "red"}
    pick = live("column", contacts["id"], name="Pick", type="select", options={"values": ["a"]})
    pick["options"] = {"values": ["a"], "color": "red"}
    view = {**live("view", contacts["id"], name="V", sort=["Odd"]), "filter": 7}
    spaced = {**live("grant", contacts["id"], principal="team"), "principal": "team sales"}
    empty = live("insight_selection", SCOPE, chatroom=CHATROOM, tables=[])
    exported = export([contacts, odd, pick, view, spaced, empty])
    specs = {line.get("ref"): line.get("spec") for line in exported}
    assert specs["contacts"]["settings"] == {}
    assert specs["odd"]["options"] == {}
    assert specs["pick"]["options"] == {"values": ["a"]}
    assert specs["v"] == {"name": "V", "columns": [], "sort": ["Odd"]}
    assert {line["kind"] for line in exported} == {
        *("header", "table", "column", "view", "insight_selection")
    }
    [selection] = [line for line in exported if line["kind"] == "insight_selection"]
    assert selection["tables"] == []  # none selected yet: a document can say so


def test_records_keyed_by_unique_columns_else_by_all_their_scalars() -> None:
    companies = live("table", name="Companies")
    name = live("column", companies["id"], name="Name", type="text", unique=True)
    size = live("column", companies["id"], name="Size", type="number")
    notes = live("table", name="Notes")
    text = live("column", notes["id"], name="Text", type="text")
    stars = live("column", notes["id"], name="Stars", type="number")
    data = live("column", notes["id"], name="Data", type="json")
    about = live(
        "column", notes["id"], name="About", type="reference", options={"table": companies["id"]}
    )
    acme = record(companies, **{name["key"]: "Acme", size["key"]: 10})
    nameless = record(companies, **{size["key"]: 10})  # no unique value: keyed by the rest
    records = {
        companies["id"]: [acme, nameless, record(companies, **{name["key"]: "Acme"})],
        notes["id"]: [
            record(notes, **{text["key"]: "hi", stars["key"]: 2.5, about["key"]: acme["id"]}),
            record(notes, **{text["key"]: "hi", data["key"]: "scalar json", "col_gone00": 1}),
            record(notes, **{data["key"]: {"only": "json"}, about["key"]: acme["id"]}),
            record(notes, **{text["key"]: "hi", stars["key"]: 2.5}),  # same key as the first
            record(notes, **{stars["key"]: 1, about["key"]: nameless["id"]}),
            record(notes, **{stars["key"]: 2, about["key"]: _uuid()}),  # dangling
            record(notes, **{stars["key"]: 2.0}),  # 2.0 is not 2
        ],
    }
    snapshot = [companies, notes, name, size, text, stars, data, about]
    exported = [line for line in export(snapshot, (), records) if line["kind"] == "record"]
    assert [(line["table"], line["key"], line["values"]) for line in exported] == [
        ("companies", {"name": "Acme"}, {"name": "Acme", "size": 10}),
        ("companies", {"size": 10}, {"size": 10}),
        (
            "notes",
            {"text": "hi", "stars": 2.5},
            {"text": "hi", "stars": 2.5, "about": {"name": "Acme"}},
        ),
        ("notes", {"text": "hi", "data": "scalar json"}, {"text": "hi", "data": "scalar json"}),
        ("notes", {"stars": 1}, {"stars": 1, "about": {"size": 10}}),
        ("notes", {"stars": 2}, {"stars": 2}),
        ("notes", {"stars": 2.0}, {"stars": 2.0}),
    ]


def test_exact_json_and_same_inputs_same_bytes() -> None:
    table = live("table", name="T", settings={"big": 2**80, "f": 1.0})
    column = live("column", table["id"], name="N", type="number")
    records = {table["id"]: [record(table, **{column["key"]: 12345678901234567890123})]}
    first = export_document("crm", [table, column], [], records)
    assert b'"big":1208925819614629174706176' in first and b'"f":1.0' in first
    assert b'"key":{"n":12345678901234567890123}' in first
    assert export_document("crm", [table, column], [], records) == first
    assert first.endswith(b"\n") and first.count(b"\n") == 4


def test_a_system_name_a_document_cannot_carry_is_refused() -> None:
    with pytest.raises(BadInput, match="system 'CRM' must match"):
        export_document("CRM", [], [], {})
    assert export([]) == [{"kind": "header", "system": "crm", "version": 1}]


# what the catalog can hold: PostgreSQL text has no U+0000
_NAMES = st.text(
    st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), min_size=1, max_size=12
).filter(str.strip)


@given(
    tables=st.lists(_NAMES, min_size=1, max_size=6),
    columns=st.lists(_NAMES, max_size=8, unique_by=str),
    commands=st.lists(_NAMES, max_size=4),
)
@settings(max_examples=200, deadline=None)
def test_any_names_make_a_valid_document_with_distinct_refs(tables, columns, commands) -> None:
    snapshot = [live("table", name=name) for name in tables]
    parent = snapshot[0]["id"]
    snapshot += [live("column", parent, name=name, type="text") for name in columns]
    snapshot += [live("command", SCOPE, name=name) for name in commands]
    exported = export(snapshot)  # parse_document accepts it (duplicate refs included)
    assert len(set(refs_of(exported, "table"))) == len(tables)
    assert len(refs_of(exported, "column")) == len(columns)
    assert len(refs_of(exported, "command")) == len(commands)


# --- export_scope: a crm scope built through the catalog API -------------------------------


def qualified_refs(exported: list[dict[str, Any]]) -> set[str]:
    out = set()
    for line in exported:
        kind, table = line["kind"], line.get("table")
        if kind == "grant":
            out.add(f"{table}.grant:{line['principal']}")
        elif kind == "client_access":
            out.add(f"{table}.client_access")
        elif kind == "command":
            out.add(f"command:{line['ref']}")
        elif kind == "insight_selection":
            out.add(f"insight.{line['chatroom']}")
        elif kind not in ("header", "record"):
            out.add(f"{table}.{line['ref']}" if table else line["ref"])
    return out


async def test_export_scope_of_a_crm_scope(conn) -> None:
    ids = await build_crm(conn)
    before = await load_scope_snapshot(conn, ids["scope"])
    document = await export_scope(conn, ids["scope"], "crm")
    exported = lines(document)
    assert qualified_refs(exported) == set(ids) - {"scope"}
    records = [line for line in exported if line["kind"] == "record"]
    assert [r["key"] for r in records] == [
        *({"name": name} for name in COMPANIES),
        *({"email": f"p{i}@crm.test"} for i in range(CONTACTS)),
    ]
    assert records[-1]["values"] == {
        "email": "p5@crm.test",
        "age": 25,
        "vip": False,
        "born": "1990-01-31",
        "seen": "2026-07-19T08:30:00+00:00",
        "stage": "customer",
        "company": {"name": "Initech"},
        "profile": {"i": 5, "big": 2**70},
    }
    # A pure read: the same bytes again, no state rows, the catalog untouched.
    assert await export_scope(conn, ids["scope"], "crm") == document
    assert await conn.fetchval("SELECT count(*) FROM iac_state") == 0
    assert await load_scope_snapshot(conn, ids["scope"]) == before
    assert not conn.is_in_transaction()


async def test_export_scope_reuses_state_refs_and_leaves_other_systems_out(conn) -> None:
    ids = await build_crm(conn)
    scope = ids["scope"]
    contacts = ids["contacts"]
    await replace_rows(
        conn,
        scope,
        "crm",
        [],
        [
            StateRow("crm", "table", "people", contacts, contacts),
            StateRow("crm", "column", "people.mail", ids["contacts.email"], contacts),
        ],
    )
    await replace_rows(
        conn,
        scope,
        "billing",
        [],
        [StateRow("billing", "table", "companies", ids["companies"], ids["companies"])],
    )
    state_before = await conn.fetch("SELECT * FROM iac_state ORDER BY ref")
    exported = lines(await export_scope(conn, scope, "crm"))
    refs = qualified_refs(exported)
    assert {"people", "people.mail", "people.active", "people.directory"} <= refs
    assert not any(ref.startswith(("companies", "contacts")) for ref in refs)
    assert "people.company" not in refs  # it points at billing's table
    view = next(line for line in exported if line["kind"] == "view")
    assert view["spec"]["columns"] == ["mail"]
    records = [line for line in exported if line["kind"] == "record"]
    assert {r["table"] for r in records} == {"people"} and len(records) == CONTACTS
    assert records[0]["key"] == {"mail": "p0@crm.test"} and "company" not in records[0]["values"]
    billing = lines(await export_scope(conn, scope, "billing"))
    # billing's table and what nobody manages; nothing of crm's (the insight selection is
    # on crm's table)
    assert qualified_refs(billing) == {"companies", "companies.name", "command:sync"}
    assert len([line for line in billing if line["kind"] == "record"]) == len(COMPANIES)
    assert await conn.fetch("SELECT * FROM iac_state ORDER BY ref") == state_before


async def test_export_scope_of_an_unknown_scope(conn) -> None:
    with pytest.raises(NotFound):
        await export_scope(conn, "00000000-0000-4000-8000-000000000000", "crm")
