"""Records: values by column name, type checks, required, defaults, references, unique,
pagination, the internal by-key form, and column changes against stored records."""

import uuid

import pytest

from app.catalog import resources
from app.catalog.records import (
    delete_record,
    get_record,
    insert_record,
    insert_records_by_key,
    list_records_by_key,
    records_of,
    update_record,
)
from app.catalog.scopes import create_scope
from app.errors import BadInput, Conflict, NotFound


@pytest.fixture
async def crm(conn) -> dict:
    """Companies and Contacts, one column of every type on Contacts."""
    scope = await create_scope(conn, "crm", "CRM")
    companies = await resources.create(conn, "table", scope["id"], {"name": "Companies"})
    contacts = await resources.create(conn, "table", scope["id"], {"name": "Contacts"})
    columns = {}
    for name, type_, extra in [
        ("Email", "text", {"required": True, "unique": True}),
        ("Age", "number", {}),
        ("VIP", "boolean", {"default": False}),
        ("Born", "date", {}),
        ("Seen", "datetime", {}),
        ("Stage", "select", {"options": {"values": ["lead", "customer"]}, "default": "lead"}),
        ("Company", "reference", {"options": {"table": companies["id"]}}),
        ("Extra", "json", {}),
    ]:
        columns[name] = await resources.create(
            conn, "column", contacts["id"], {"name": name, "type": type_, **extra}
        )
    await resources.create(conn, "column", companies["id"], {"name": "Name", "type": "text"})
    acme = await insert_record(conn, companies["id"], {"Name": "Acme"})
    return {"contacts": contacts, "companies": companies, "columns": columns, "acme": acme}


async def test_insert_by_name_fills_defaults_and_returns_by_name(conn, crm) -> None:
    record = await insert_record(
        conn,
        crm["contacts"]["id"],
        {
            "Email": "ada@x.test",
            "Age": 36.5,
            "Born": "1815-12-10",
            "Seen": "2026-07-19T08:30:00Z",
            "Company": crm["acme"]["id"].upper(),
            "Extra": {"any": ["json", 1, None]},
            "Stage": None,
        },
    )
    assert record["values"] == {
        "Email": "ada@x.test",
        "Age": 36.5,
        "VIP": False,
        "Born": "1815-12-10",
        "Seen": "2026-07-19T08:30:00Z",
        "Company": crm["acme"]["id"],
        "Extra": {"any": ["json", 1, None]},
    }
    stored = await conn.fetchval('SELECT "values" FROM records WHERE id = $1', record["id"])
    assert set(stored) == {crm["columns"][n]["key"] for n in record["values"]}
    assert await get_record(conn, record["id"]) == record


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("Email", 5, "column 'Email': must be a text value, got integer"),
        ("Age", "36", "column 'Age': must be a number value, got string"),
        ("Age", True, "column 'Age': must be a number value, got boolean"),
        ("VIP", "yes", "column 'VIP': must be a boolean value, got string"),
        ("Born", "10/12/1815", "column 'Born': must be an ISO 8601 date"),
        ("Born", 1815, "column 'Born': must be a date value, got integer"),
        ("Seen", "yesterday", "column 'Seen': must be an ISO 8601 datetime"),
        ("Stage", "churned", "column 'Stage': \"churned\" is not one of the select options.values"),
        ("Company", "acme", r"column 'Company': must be a record ID \(UUID\)"),
        ("Company", str(uuid.uuid4()), "column 'Company': no record .* in the referenced table"),
        ("Nickname", "x", "table 'Contacts' has no column\\(s\\) 'Nickname'"),
    ],
)
async def test_values_of_the_wrong_type_are_refused(conn, crm, column, value, message) -> None:
    with pytest.raises(BadInput, match=message):
        await insert_record(conn, crm["contacts"]["id"], {"Email": "a@x.test", column: value})
    assert await conn.fetchval("SELECT count(*) FROM records") == 1  # only Acme


async def test_a_reference_must_point_into_the_target_table(conn, crm) -> None:
    contact = await insert_record(conn, crm["contacts"]["id"], {"Email": "a@x.test"})
    with pytest.raises(BadInput, match=r"no record .* in the referenced table"):
        await insert_record(
            conn, crm["contacts"]["id"], {"Email": "b@x.test", "Company": contact["id"]}
        )


async def test_required_and_unique(conn, crm) -> None:
    contacts = crm["contacts"]["id"]
    with pytest.raises(BadInput, match=r"column 'Email' is required"):
        await insert_record(conn, contacts, {"Age": 3})
    first = await insert_record(conn, contacts, {"Email": "a@x.test"})
    with pytest.raises(Conflict, match=r"column 'Email' is unique: 'a@x.test' already exists"):
        await insert_record(conn, contacts, {"Email": "a@x.test"})
    email = crm["columns"]["Email"]["key"]
    with pytest.raises(Conflict, match=r"appears twice"):
        await insert_records_by_key(conn, contacts, [{email: "b@x.test"}, {email: "b@x.test"}])
    assert (await update_record(conn, first["id"], {"Email": "a@x.test", "Age": 1}))["values"][
        "Age"
    ] == 1
    second = await insert_record(conn, contacts, {"Email": "b@x.test"})
    with pytest.raises(Conflict, match=r"already exists"):
        await update_record(conn, second["id"], {"Email": "a@x.test"})
    with pytest.raises(BadInput, match=r"column 'Email' is required"):
        await update_record(conn, second["id"], {"Email": None})


async def test_update_changes_only_given_values_and_null_removes(conn, crm) -> None:
    record = await insert_record(conn, crm["contacts"]["id"], {"Email": "a@x.test", "Age": 3})
    updated = await update_record(conn, record["id"], {"Age": None, "Stage": "customer"})
    assert updated["values"] == {"Email": "a@x.test", "VIP": False, "Stage": "customer"}
    deleted = await delete_record(conn, record["id"])
    assert deleted["values"] == updated["values"]
    with pytest.raises(NotFound):
        await get_record(conn, record["id"])
    with pytest.raises(NotFound):
        await update_record(conn, record["id"], {})


async def test_pages_in_creation_order(conn, crm) -> None:
    contacts = crm["contacts"]["id"]
    email = crm["columns"]["Email"]["key"]
    ids = await insert_records_by_key(conn, contacts, [{email: f"{i}@x.test"} for i in range(7)])
    page = (await records_of(conn, [contacts], first=3))[contacts]
    assert [r["id"] for r in page.rows] == ids[:3] and page.has_next and page.total == 7
    after = (await records_of(conn, [contacts], first=6))[contacts].keys[-1]
    page = (await records_of(conn, [contacts], first=3, after=after))[contacts]
    assert [r["values"]["Email"] for r in page.rows] == ["6@x.test"] and not page.has_next
    pages = await records_of(conn, [crm["companies"]["id"], contacts, str(uuid.uuid4())], first=2)
    assert [r["values"] for r in pages[crm["companies"]["id"]].rows] == [{"Name": "Acme"}]
    assert [r["id"] for r in pages[contacts].rows] == ids[:2]
    assert len(pages) == 2  # a table without records has no page
    by_key = await list_records_by_key(conn, [contacts])
    vip, stage = crm["columns"]["VIP"]["key"], crm["columns"]["Stage"]["key"]
    assert [r["values"] for r in by_key[contacts]] == [
        {email: f"{i}@x.test", vip: False, stage: "lead"} for i in range(7)
    ]


async def test_column_changes_must_fit_the_stored_records(conn, crm) -> None:
    contacts = crm["contacts"]["id"]
    await insert_record(conn, contacts, {"Email": "a@x.test", "Age": 3, "Extra": "text"})
    await insert_record(conn, contacts, {"Email": "b@x.test", "Extra": "text"})
    columns = crm["columns"]
    with pytest.raises(Conflict, match=r"column 'Extra': record .* does not fit"):
        await resources.update(conn, "column", columns["Extra"]["id"], {"type": "number"})
    with pytest.raises(Conflict, match=r"cannot be required: 1 record"):
        await resources.update(conn, "column", columns["Age"]["id"], {"required": True})
    with pytest.raises(Conflict, match=r"cannot be unique"):
        await resources.update(conn, "column", columns["Extra"]["id"], {"unique": True})
    with pytest.raises(Conflict, match=r"does not fit"):
        await resources.update(
            conn,
            "column",
            columns["Stage"]["id"],
            {"options": {"values": ["customer"]}, "default": "customer"},
        )
    with pytest.raises(Conflict, match=r"cannot be required: 2 record"):
        await resources.create(
            conn, "column", contacts, {"name": "Phone", "type": "text", "required": True}
        )
    retyped = await resources.update(conn, "column", columns["Age"]["id"], {"type": "json"})
    assert retyped["type"] == "json"
    await resources.delete(conn, "column", columns["Extra"]["id"])
    stored = await conn.fetch('SELECT "values" FROM records WHERE table_id = $1', contacts)
    assert all(columns["Extra"]["key"] not in r["values"] for r in stored)
