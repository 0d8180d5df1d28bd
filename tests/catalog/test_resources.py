"""Catalog resources: validation, IDs, column_mapping, cascades, snapshot."""

import re
import uuid

import pytest

from app.catalog import resources, tables
from app.catalog.columns import delete_column
from app.catalog.records import insert_record
from app.catalog.scopes import create_scope, delete_scope, scope_by_slug, update_scope
from app.catalog.snapshot import load_scope_snapshot
from app.errors import BadInput, Conflict, NotFound


@pytest.fixture
async def scope(conn) -> dict:
    return await create_scope(conn, "crm", "CRM")


@pytest.fixture
async def table(conn, scope) -> dict:
    return await resources.create(conn, "table", scope["id"], {"name": "Contacts"})


async def _column(conn, table, name: str, type_: str = "text", **spec) -> dict:
    return await resources.create(
        conn, "column", table["id"], {"name": name, "type": type_, **spec}
    )


async def _mapping(conn, table) -> dict:
    return (await resources.get(conn, "table", table["id"]))["settings"]["column_mapping"]


async def test_scope_slug_is_unique_and_validated(conn, scope) -> None:
    assert (await scope_by_slug(conn, "crm"))["id"] == scope["id"]
    with pytest.raises(Conflict, match=r"slug 'crm' already exists"):
        await create_scope(conn, "crm", "Other")
    with pytest.raises(BadInput, match=r"scope.slug \"Not A Slug\" must match"):
        await create_scope(conn, "Not A Slug", "x")
    renamed = await update_scope(conn, scope["id"], {"name": "Sales"})
    assert (renamed["slug"], renamed["name"]) == ("crm", "Sales")
    with pytest.raises(NotFound):
        await scope_by_slug(conn, "nope")


async def test_unknown_and_missing_fields_are_bad_input(conn, scope, table) -> None:
    with pytest.raises(BadInput, match=r"unknown table field"):
        await resources.create(conn, "table", scope["id"], {"name": "x", "colour": "red"})
    with pytest.raises(BadInput, match=r"rule.expression is required"):
        await resources.create(conn, "rule", table["id"], {"message": "m"})
    with pytest.raises(BadInput, match=r"trigger.event must be one of insert, update, delete"):
        await resources.create(conn, "trigger", table["id"], {"event": "upsert"})
    with pytest.raises(BadInput, match=r"unknown resource kind"):
        await resources.create(conn, "widget", table["id"], {})
    with pytest.raises(NotFound):
        await resources.create(conn, "rule", str(uuid.uuid4()), {"expression": "true"})
    with pytest.raises(NotFound):
        await resources.get(conn, "rule", "not-an-id")


async def test_server_owned_settings_are_refused_and_kept(conn, scope, table) -> None:
    for key in ("column_mapping", "iac"):
        with pytest.raises(BadInput, match=f"settings.{key} is server-owned"):
            await resources.create(conn, "table", scope["id"], {"name": "x", "settings": {key: {}}})
    await _column(conn, table, "Email")
    await tables.mark_managed(conn, "crm", [(table["id"], "contacts")])
    updated = await resources.update(conn, "table", table["id"], {"settings": {"color": "blue"}})
    assert updated["settings"]["color"] == "blue"
    assert list(updated["settings"]["column_mapping"]) == ["Email"]
    assert updated["settings"]["iac"] == {"system": "crm", "ref": "contacts"}
    assert "system:crm" in updated["tags"]


async def test_tags(conn, table) -> None:
    await tables.add_table_tag(conn, table["id"], "system:crm")
    await tables.add_table_tag(conn, table["id"], "system:crm")
    tagged = await tables.add_table_tag(conn, table["id"], "pii")
    assert tagged["tags"] == ["system:crm", "pii"]
    assert (await tables.remove_table_tag(conn, table["id"], "system:crm"))["tags"] == ["pii"]
    with pytest.raises(BadInput, match=r"table.tags lists \"a\" twice"):
        await resources.update(conn, "table", table["id"], {"tags": ["a", "a"]})


async def test_column_ids_keys_and_validation(conn, scope, table) -> None:
    column = await _column(conn, table, "Email", required=True, unique=True)
    assert re.fullmatch(r"col_[0-9a-z]{6}", column["key"])
    assert column["id"] == f"{table['id']}:{column['key']}"
    assert (await resources.get(conn, "column", column["id"]))["name"] == "Email"
    with pytest.raises(BadInput, match=r"column.type must be one of text, number"):
        await _column(conn, table, "Age", "integer")
    with pytest.raises(Conflict, match=r"already has a column named 'Email'"):
        await _column(conn, table, "Email", "number")
    with pytest.raises(BadInput, match=r"column.options.values"):
        await _column(conn, table, "Stage", "select")
    with pytest.raises(BadInput, match=r"column.default \"c\" is not one of the select"):
        await _column(conn, table, "Stage", "select", options={"values": ["a", "b"]}, default="c")
    with pytest.raises(BadInput, match=r"column.options.table"):
        await _column(conn, table, "Company", "reference")
    other_scope = await create_scope(conn, "other", "Other")
    foreign = await resources.create(conn, "table", other_scope["id"], {"name": "Far"})
    with pytest.raises(BadInput, match=r"in this scope"):
        await _column(conn, table, "Company", "reference", options={"table": foreign["id"]})
    with pytest.raises(BadInput, match=r"takes no default"):
        await _column(conn, table, "Self", "reference", options={"table": table["id"]}, default="x")


async def test_column_mapping_follows_create_rename_delete(conn, table) -> None:
    email = await _column(conn, table, "Email")
    name = await _column(conn, table, "Name")
    assert await _mapping(conn, table) == {"Email": email["key"], "Name": name["key"]}
    renamed = await resources.update(conn, "column", email["id"], {"name": "Mail"})
    assert renamed["key"] == email["key"] and renamed["id"] == email["id"]
    assert await _mapping(conn, table) == {"Mail": email["key"], "Name": name["key"]}
    await resources.delete(conn, "column", name["id"])
    assert await _mapping(conn, table) == {"Mail": email["key"]}


async def test_views_store_keys_and_survive_renames(conn, table) -> None:
    email = await _column(conn, table, "Email")
    name = await _column(conn, table, "Name")
    view = await resources.create(
        conn, "view", table["id"], {"name": "Active", "columns": [email["id"], name["key"]]}
    )
    assert view["columns"] == [email["id"], name["id"]]
    assert await conn.fetchval("SELECT columns FROM views") == [email["key"], name["key"]]
    with pytest.raises(BadInput, match=r"view.columns: the table has no column 'col_zzzzzz'"):
        await resources.update(conn, "view", view["id"], {"columns": ["col_zzzzzz"]})
    with pytest.raises(BadInput, match=r"view.columns"):
        await resources.create(conn, "view", table["id"], {"columns": ["Email"]})
    await resources.update(conn, "column", email["id"], {"name": "Mail"})
    assert (await resources.get(conn, "view", view["id"]))["columns"] == [email["id"], name["id"]]
    await delete_column(conn, name["id"])
    assert (await resources.get(conn, "view", view["id"]))["columns"] == [email["id"]]


async def test_grants_and_client_access(conn, table) -> None:
    grant = await resources.create(conn, "grant", table["id"], {"principal": "team:sales"})
    assert grant["permissions"] == ["read"]
    with pytest.raises(BadInput, match=r"grant.permissions\[1\] must be one of read, write"):
        await resources.update(conn, "grant", grant["id"], {"permissions": ["read", "delete"]})
    with pytest.raises(BadInput, match=r"grant.permissions must not be empty"):
        await resources.update(conn, "grant", grant["id"], {"permissions": []})
    with pytest.raises(Conflict, match=r"already has a grant for 'team:sales'"):
        await resources.create(conn, "grant", table["id"], {"principal": "team:sales"})
    first = await resources.set_client_access(conn, table["id"], {"origins": ["https://a.test"]})
    second = await resources.set_client_access(conn, table["id"], {"rate_limit": 60})
    assert first["id"] == second["id"]
    assert (second["enabled"], second["origins"], second["rate_limit"]) == (
        True,
        ["https://a.test"],
        60,
    )
    with pytest.raises(Conflict, match=r"already has client access"):
        await resources.create(conn, "client_access", table["id"], {})
    with pytest.raises(BadInput, match=r"client_access.rate_limit"):
        await resources.set_client_access(conn, table["id"], {"rate_limit": -1})


async def test_insight_selections_and_public_reads(conn, scope, table) -> None:
    other = await resources.create(conn, "table", scope["id"], {"name": "Companies"})
    chatroom = str(uuid.uuid4())
    selection = await resources.create(
        conn, "insight_selection", scope["id"], {"chatroom": chatroom, "tables": [table["id"]]}
    )
    assert selection["tables"] == [table["id"]] and selection["scope_id"] == scope["id"]
    with pytest.raises(Conflict, match=r"insight selection for chatroom"):
        await resources.create(conn, "insight_selection", scope["id"], {"chatroom": chatroom})
    with pytest.raises(BadInput, match=r"insight_selection.tables: no table"):
        await resources.update(
            conn, "insight_selection", selection["id"], {"tables": [str(uuid.uuid4())]}
        )
    view = await resources.create(conn, "view", table["id"], {"name": "All"})
    other_view = await resources.create(conn, "view", other["id"], {"name": "All"})
    public = await resources.create(
        conn, "public_read", table["id"], {"ref": "directory", "view": view["id"]}
    )
    assert public["view"] == view["id"]
    with pytest.raises(BadInput, match=r"public_read.view: no view"):
        await resources.create(
            conn, "public_read", table["id"], {"ref": "other", "view": other_view["id"]}
        )
    with pytest.raises(Conflict, match=r"public read 'directory'"):
        await resources.create(conn, "public_read", table["id"], {"ref": "directory"})
    await resources.delete(conn, "view", view["id"])  # revokes the public read with it
    with pytest.raises(NotFound):
        await resources.get(conn, "public_read", public["id"])


async def test_deleting_a_table_removes_what_it_holds(conn, scope, table) -> None:
    column = await _column(conn, table, "Email")
    for kind, spec in [
        ("rule", {"expression": "len(Email) > 3"}),
        ("trigger", {"event": "insert", "action": {"webhook": "https://x.test"}}),
        ("view", {"columns": [column["key"]]}),
        ("grant", {"principal": "bob", "permissions": ["read", "write"]}),
        ("client_access", {}),
        ("public_read", {"ref": "dir"}),
    ]:
        await resources.create(conn, kind, table["id"], spec)
    selection = await resources.create(
        conn,
        "insight_selection",
        scope["id"],
        {"chatroom": str(uuid.uuid4()), "tables": [table["id"]]},
    )
    await insert_record(conn, table["id"], {"Email": "a@x.test"})
    referrer = await resources.create(conn, "table", scope["id"], {"name": "Deals"})
    link = await _column(conn, referrer, "Contact", "reference", options={"table": table["id"]})
    with pytest.raises(Conflict, match=r"referenced by column\(s\) Deals.Contact"):
        await resources.delete(conn, "table", table["id"])
    await resources.delete(conn, "column", link["id"])
    await resources.delete(conn, "table", table["id"])
    for sql_table in ("columns", "rules", "triggers", "views", "grants", "client_access"):
        assert await conn.fetchval(f"SELECT count(*) FROM {sql_table}") == 0, sql_table
    assert await conn.fetchval("SELECT count(*) FROM public_reads") == 0
    assert await conn.fetchval("SELECT count(*) FROM records") == 0
    assert (await resources.get(conn, "insight_selection", selection["id"]))["tables"] == []


async def test_deleting_a_scope_removes_everything(conn, scope, table) -> None:
    await _column(conn, table, "Email")
    await resources.create(conn, "command", scope["id"], {"name": "Sync"})
    await insert_record(conn, table["id"], {"Email": "a@x.test"})
    await delete_scope(conn, scope["id"])
    for sql_table in ("tables", "columns", "commands", "records"):
        assert await conn.fetchval(f"SELECT count(*) FROM {sql_table}") == 0, sql_table


async def _build(conn, scope, n_tables: int) -> None:
    for i in range(n_tables):
        table = await resources.create(conn, "table", scope["id"], {"name": f"T{i}"})
        column = await _column(conn, table, "C")
        await resources.create(conn, "rule", table["id"], {"expression": "true"})
        await resources.create(conn, "trigger", table["id"], {"event": "delete"})
        view = await resources.create(conn, "view", table["id"], {"columns": [column["id"]]})
        await resources.create(conn, "grant", table["id"], {"principal": "p"})
        await resources.set_client_access(conn, table["id"], {"enabled": False})
        await resources.create(conn, "public_read", table["id"], {"ref": "r", "view": view["id"]})
    await resources.create(conn, "command", scope["id"], {"name": f"Cmd{n_tables}"})
    await resources.create(conn, "insight_selection", scope["id"], {"chatroom": str(uuid.uuid4())})


async def _counted_snapshot(conn, scope) -> tuple[list[dict], int]:
    queries: list[str] = []

    def log(record) -> None:
        queries.append(record.query)

    conn.add_query_logger(log)
    try:
        snapshot = await load_scope_snapshot(conn, scope["id"])
    finally:
        conn.remove_query_logger(log)
    return snapshot, len(queries)


async def test_snapshot_lists_every_resource_in_a_fixed_number_of_queries(conn, scope) -> None:
    await _build(conn, scope, 1)
    small, small_queries = await _counted_snapshot(conn, scope)
    big_scope = await create_scope(conn, "big", "Big")
    await _build(conn, big_scope, 6)
    big, big_queries = await _counted_snapshot(conn, big_scope)
    assert small_queries == big_queries
    assert len(small) == 10 and len(big) == 6 * 8 + 2
    kinds = [r["kind"] for r in small]
    assert kinds == [
        "table",
        "column",
        "rule",
        "trigger",
        "view",
        "grant",
        "client_access",
        "command",
        "insight_selection",
        "public_read",
    ]
    by_kind = {r["kind"]: r for r in small}
    table = by_kind["table"]
    assert table["table_id"] == table["id"] and table["scope_id"] == scope["id"]
    assert by_kind["column"]["id"] == f"{table['id']}:{by_kind['column']['key']}"
    assert by_kind["view"]["columns"] == [by_kind["column"]["id"]]
    assert by_kind["public_read"]["view"] == by_kind["view"]["id"]
    assert by_kind["command"]["table_id"] is None and by_kind["command"]["name"] == "Cmd1"
    assert all(r["scope_id"] == scope["id"] and r["created_at"] for r in small)
    assert [r["name"] for r in big if r["kind"] == "table"] == [f"T{i}" for i in range(6)]
