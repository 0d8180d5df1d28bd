"""The catalog over GraphQL: a `crm` scope built by hand and read back, column_mapping,
table deletion, record pages, error codes, and statements that do not grow with items."""

import uuid
from typing import Any

from tests.helpers.graphql import error_codes, gql

TABLE_FIELDS = """
    id name description settings tags
    columns { id key name type required unique default options }
    rules { expression message severity }
    triggers { event condition action }
    views { name columnIds columns { name } filter sort }
    grants { principal permissions }
    clientAccess { enabled origins rateLimit }
    publicReads { ref view { name } }
    records(first: 100) { totalCount edges { node { id values } } }
"""
READ_SCOPE = f"""query($slug: String!) {{
  scope(slug: $slug) {{
    slug name
    tables {{ {TABLE_FIELDS} }}
    commands {{ name description action }}
    insightSelections {{ chatroom tables {{ name }} }}
  }}
}}"""


async def _create(client, kind: str, parent_arg: str, parent: str, spec: dict) -> dict[str, Any]:
    name = kind[0].upper() + kind[1:]
    data = await gql(
        client,
        f"""mutation($parent: {"String" if parent_arg == "scope" else "ID"}!,
                     $input: {name}Input!) {{
              r: create{name}({parent_arg}: $parent, input: $input) {{ id }} }}""",
        {"parent": parent, "input": spec},
    )
    return data["r"]


async def _insert(client, table: str, values: dict) -> dict[str, Any]:
    data = await gql(
        client,
        """mutation($t: ID!, $v: JSON!) { insertRecord(table: $t, values: $v) { id values } }""",
        {"t": table, "v": values},
    )
    return data["insertRecord"]


async def _build_crm(client, slug: str = "crm", companies_count: int = 5) -> dict[str, Any]:
    await gql(
        client,
        """mutation($s: String!) { createScope(slug: $s, name: "CRM") { id } }""",
        {"s": slug},
    )
    companies = await _create(
        client, "table", "scope", slug, {"name": "Companies", "tags": ["sales"]}
    )
    contacts = await _create(
        client,
        "table",
        "scope",
        slug,
        {"name": "Contacts", "description": "People", "settings": {"color": "blue"}},
    )
    await _create(
        client, "column", "table", companies["id"], {"name": "Name", "type": "TEXT", "unique": True}
    )
    email = await _create(
        client,
        "column",
        "table",
        contacts["id"],
        {"name": "Email", "type": "TEXT", "required": True, "unique": True},
    )
    for spec in [
        {"name": "Age", "type": "NUMBER"},
        {"name": "VIP", "type": "BOOLEAN", "default": False},
        {"name": "Born", "type": "DATE"},
        {"name": "Stage", "type": "SELECT", "options": {"values": ["lead", "customer"]}},
        {"name": "Company", "type": "REFERENCE", "options": {"table": companies["id"]}},
        {"name": "Profile", "type": "JSON"},
    ]:
        await _create(client, "column", "table", contacts["id"], spec)
    await _create(
        client, "rule", "table", contacts["id"], {"expression": "Age >= 0", "severity": "WARNING"}
    )
    await _create(
        client,
        "trigger",
        "table",
        contacts["id"],
        {"event": "INSERT", "action": {"notify": "#sales"}},
    )
    view = await _create(
        client,
        "view",
        "table",
        contacts["id"],
        {"name": "Active", "columns": [email["id"]], "filter": {"Stage": "customer"}},
    )
    await _create(
        client,
        "grant",
        "table",
        contacts["id"],
        {"principal": "team:sales", "permissions": ["READ", "WRITE"]},
    )
    await gql(
        client,
        """mutation($t: ID!) { setClientAccess(table: $t, input: {origins: ["https://crm.test"],
                                                               rateLimit: 60}) { id } }""",
        {"t": contacts["id"]},
    )
    await _create(
        client, "command", "scope", slug, {"name": "Sync", "action": {"url": "https://x.test"}}
    )
    chatroom = str(uuid.uuid4())
    await _create(
        client,
        "insightSelection",
        "scope",
        slug,
        {"chatroom": chatroom, "tables": [contacts["id"]]},
    )
    await _create(
        client, "publicRead", "table", contacts["id"], {"ref": "directory", "view": view["id"]}
    )
    company_ids = [
        (await _insert(client, companies["id"], {"Name": f"Company {i}"}))["id"]
        for i in range(companies_count)
    ]
    for i in range(50 - companies_count):
        await _insert(
            client,
            contacts["id"],
            {
                "Email": f"p{i}@crm.test",
                "Age": 20 + i,
                "Born": "1990-01-31",
                "Stage": "customer" if i % 2 else "lead",
                "Company": company_ids[i % companies_count],
                "Profile": {"i": i},
            },
        )
    return {"companies": companies, "contacts": contacts, "chatroom": chatroom, "email": email}


async def test_build_a_crm_scope_by_hand_and_read_it_back(client) -> None:
    built = await _build_crm(client)
    scope = (await gql(client, READ_SCOPE, {"slug": "crm"}))["scope"]
    companies, contacts = scope["tables"]
    assert [companies["name"], contacts["name"]] == ["Companies", "Contacts"]
    assert companies["tags"] == ["sales"]
    assert contacts["description"] == "People" and contacts["settings"]["color"] == "blue"
    columns = {c["name"]: c for c in contacts["columns"]}
    assert list(columns) == ["Email", "Age", "VIP", "Born", "Stage", "Company", "Profile"]
    assert contacts["settings"]["column_mapping"] == {n: c["key"] for n, c in columns.items()}
    assert columns["Email"]["id"] == f"{contacts['id']}:{columns['Email']['key']}"
    assert (columns["Email"]["required"], columns["Email"]["unique"]) == (True, True)
    assert columns["Company"]["type"] == "REFERENCE"
    assert columns["Company"]["options"] == {"table": companies["id"]}
    assert columns["VIP"]["default"] is False
    assert contacts["rules"] == [{"expression": "Age >= 0", "message": None, "severity": "WARNING"}]
    assert contacts["triggers"] == [
        {"event": "INSERT", "condition": None, "action": {"notify": "#sales"}}
    ]
    assert contacts["views"] == [
        {
            "name": "Active",
            "columnIds": [built["email"]["id"]],
            "columns": [{"name": "Email"}],
            "filter": {"Stage": "customer"},
            "sort": None,
        }
    ]
    assert contacts["grants"] == [{"principal": "team:sales", "permissions": ["READ", "WRITE"]}]
    assert contacts["clientAccess"] == {
        "enabled": True,
        "origins": ["https://crm.test"],
        "rateLimit": 60,
    }
    assert contacts["publicReads"] == [{"ref": "directory", "view": {"name": "Active"}}]
    assert companies["clientAccess"] is None and companies["views"] == []
    assert scope["commands"] == [
        {"name": "Sync", "description": None, "action": {"url": "https://x.test"}}
    ]
    assert scope["insightSelections"] == [
        {"chatroom": built["chatroom"], "tables": [{"name": "Contacts"}]}
    ]
    assert companies["records"]["totalCount"] + contacts["records"]["totalCount"] == 50
    company_names = {
        e["node"]["id"]: e["node"]["values"]["Name"] for e in companies["records"]["edges"]
    }
    first = contacts["records"]["edges"][0]["node"]["values"]
    assert first == {
        "Email": "p0@crm.test",
        "Age": 20,
        "VIP": False,
        "Born": "1990-01-31",
        "Stage": "lead",
        "Company": first["Company"],
        "Profile": {"i": 0},
    }
    assert company_names[first["Company"]] == "Company 0"
    listed = (await gql(client, "{ scopes { slug tables { name } } }"))["scopes"]
    assert listed == [{"slug": "crm", "tables": [{"name": "Companies"}, {"name": "Contacts"}]}]


async def test_reading_a_scope_runs_the_same_statements_however_big(client, statements) -> None:
    await _build_crm(client, "small", companies_count=2)
    await _build_crm(client, "big", companies_count=10)
    for slug in ("small", "big"):
        extra = await _create(client, "table", "scope", slug, {"name": "Extra"})
        await _create(client, "column", "table", extra["id"], {"name": "X", "type": "TEXT"})
    await _create(client, "table", "scope", "big", {"name": "More"})
    counts = []
    for slug in ("small", "big"):
        statements.statements.clear()
        await gql(client, READ_SCOPE, {"slug": slug})
        counts.append(len(statements.statements))
    assert counts[0] == counts[1]


async def test_column_mapping_follows_a_rename_and_a_delete(client) -> None:
    built = await _build_crm(client, companies_count=49)
    contacts = built["contacts"]["id"]
    renamed = await gql(
        client,
        """mutation($id: ID!) { updateColumn(id: $id, input: {name: "Mail"}) { id key name } }""",
        {"id": built["email"]["id"]},
    )
    assert renamed["updateColumn"]["id"] == built["email"]["id"]
    age = await _create(client, "column", "table", contacts, {"name": "Age2", "type": "NUMBER"})
    await gql(client, "mutation($id: ID!) { deleteColumn(id: $id) }", {"id": age["id"]})
    table = (await gql(client, READ_SCOPE, {"slug": "crm"}))["scope"]["tables"][1]
    mapping = table["settings"]["column_mapping"]
    assert "Email" not in mapping and "Age2" not in mapping
    assert mapping["Mail"] == built["email"]["id"].split(":")[1]
    assert table["records"]["edges"][0]["node"]["values"]["Mail"] == "p0@crm.test"
    assert table["views"][0]["columns"] == [{"name": "Mail"}]


async def test_deleting_a_table_removes_its_records_and_sub_resources(client, conn) -> None:
    built = await _build_crm(client)
    codes = await error_codes(
        client, "mutation($id: ID!) { deleteTable(id: $id) }", {"id": built["companies"]["id"]}
    )
    assert codes == ["CONFLICT"]  # Contacts.Company references it
    contacts = built["contacts"]["id"]
    deleted = await gql(client, "mutation($id: ID!) { deleteTable(id: $id) }", {"id": contacts})
    assert deleted["deleteTable"] == contacts
    for sql_table in (
        "columns",
        "rules",
        "triggers",
        "views",
        "grants",
        "client_access",
        "public_reads",
    ):
        assert (
            await conn.fetchval(f"SELECT count(*) FROM {sql_table} WHERE table_id = $1", contacts)
            == 0
        )
    assert await conn.fetchval("SELECT count(*) FROM records WHERE table_id = $1", contacts) == 0
    scope = (await gql(client, READ_SCOPE, {"slug": "crm"}))["scope"]
    assert [t["name"] for t in scope["tables"]] == ["Companies"]
    assert scope["insightSelections"][0]["tables"] == []
    assert scope["tables"][0]["records"]["totalCount"] == 5


async def test_record_pages_and_record_mutations(client) -> None:
    built = await _build_crm(client)
    page_query = """query($after: String) { scope(slug: "crm") { tables { name
        records(first: 20, after: $after) { totalCount pageInfo { hasNextPage endCursor }
                                           edges { node { values } } } } } }"""
    seen: list[str] = []
    after = None
    while True:
        contacts = (await gql(client, page_query, {"after": after}))["scope"]["tables"][1]
        page = contacts["records"]
        seen += [e["node"]["values"]["Email"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == [f"p{i}@crm.test" for i in range(45)]
    record = await _insert(client, built["contacts"]["id"], {"Email": "new@crm.test"})
    updated = await gql(
        client,
        """mutation($id: ID!) { updateRecord(id: $id, values: {Age: 3, VIP: null}) { values } }""",
        {"id": record["id"]},
    )
    assert updated["updateRecord"]["values"] == {"Email": "new@crm.test", "Age": 3}
    deleted = await gql(
        client, "mutation($id: ID!) { deleteRecord(id: $id) }", {"id": record["id"]}
    )
    assert deleted["deleteRecord"] == record["id"]


async def test_error_codes(client) -> None:
    built = await _build_crm(client)
    contacts = built["contacts"]["id"]
    insert = "mutation($t: ID!, $v: JSON!) { insertRecord(table: $t, values: $v) { id } }"
    assert await error_codes(client, insert, {"t": contacts, "v": {"Email": 5}}) == ["BAD_INPUT"]
    assert await error_codes(client, insert, {"t": contacts, "v": {"Age": 5}}) == ["BAD_INPUT"]
    assert await error_codes(client, insert, {"t": contacts, "v": {"Email": "p1@crm.test"}}) == [
        "CONFLICT"
    ]
    assert await error_codes(client, insert, {"t": str(uuid.uuid4()), "v": {}}) == ["NOT_FOUND"]
    create_table = 'mutation { createTable(scope: "nope", input: {name: "X"}) { id } }'
    assert await error_codes(client, create_table) == ["NOT_FOUND"]
    bad_setting = """mutation { createTable(scope: "crm", input: {name: "X",
                     settings: {column_mapping: {}}}) { id } }"""
    assert await error_codes(client, bad_setting) == ["BAD_INPUT"]
    no_type = 'mutation($t: ID!) { createColumn(table: $t, input: {name: "X"}) { id } }'
    assert await error_codes(client, no_type, {"t": contacts}) == ["BAD_INPUT"]
    duplicate = """mutation { createScope(slug: "crm", name: "Again") { id } }"""
    assert await error_codes(client, duplicate) == ["CONFLICT"]
    assert (await gql(client, '{ scope(slug: "nope") { id } }'))["scope"] is None
