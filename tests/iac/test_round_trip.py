"""The round trip of iac.md: export `crm` from a populated scope, plan it into an empty
scope (all create, records insert), apply the reviewed hash, plan again (all noop,
records skip), and the new scope's state binds the refs to the new scope's IDs."""

from app.catalog.records import list_records_by_key
from app.catalog.scopes import create_scope
from app.catalog.snapshot import load_scope_snapshot
from app.iac import service
from tests.helpers.crm import CONTACTS, build_crm

SPEC_KINDS = ("table", "column", "rule", "trigger", "view", "grant", "client_access", "command")


async def test_export_plan_apply_plan_again_into_a_new_scope(conn) -> None:
    source = await build_crm(conn, "crm")
    document = await service.export(conn, "crm", "crm")
    assert await conn.fetchval("SELECT count(*) FROM iac_state") == 0  # export wrote nothing

    await create_scope(conn, "crm-copy", "CRM copy")
    plan = await service.plan(conn, "crm-copy", document)
    resources = [a for a in plan.actions if a.kind != "record"]
    records = [a for a in plan.actions if a.kind == "record"]
    assert resources and {a.action for a in resources} == {"create"}
    assert len(records) == 3 + CONTACTS and {a.action for a in records} == {"insert"}

    applied = await service.apply(conn, "crm-copy", document, plan.hash, actor="test")
    assert (applied.state_name, applied.serial) == ("iac:crm-copy/crm", 1)

    again = await service.plan(conn, "crm-copy", document)
    assert {a.action for a in again.actions if a.kind != "record"} == {"noop"}
    assert {a.action for a in again.actions if a.kind == "record"} == {"skip"}

    state = {row["ref"]: row for row in await service.state(conn, "crm-copy", "crm")}
    copy_scope = await conn.fetchval("SELECT id FROM scopes WHERE slug = 'crm-copy'")
    live = {r["id"]: r for r in await load_scope_snapshot(conn, copy_scope)}
    source_ids = set(source.values())
    assert {"contacts", "contacts.email", "companies", "command:sync"} <= set(state)
    for ref, row in state.items():
        assert row["resource_id"] in live, ref  # bound to the new scope's resources
        assert row["resource_id"] not in source_ids, ref
        assert live[row["resource_id"]]["kind"] == row["resource_type"]

    # the records came along, references pointing into the new scope
    contacts = state["contacts"]["resource_id"]
    companies = state["companies"]["resource_id"]
    found = await list_records_by_key(conn, [contacts, companies])
    assert len(found[contacts]) == CONTACTS and len(found[companies]) == 3
    company_key = state["contacts.company"]["resource_id"].rsplit(":", 1)[1]
    company_ids = {r["id"] for r in found[companies]}
    assert {r["values"][company_key] for r in found[contacts]} <= company_ids

    # and the document exported from the copy is the same document
    assert await service.export(conn, "crm-copy", "crm") == document


async def test_an_export_planned_back_into_its_own_scope_adopts_everything(conn) -> None:
    await build_crm(conn, "crm")
    document = await service.export(conn, "crm", "crm")
    plan = await service.plan(conn, "crm", document)
    assert {a.action for a in plan.actions if a.kind != "record"} == {"adopt"}
    assert {a.action for a in plan.actions if a.kind == "record"} == {"skip"}
    assert all(not a.changes for a in plan.actions)
    before = await conn.fetchval("SELECT count(*) FROM tables")
    await service.apply(conn, "crm", document, plan.hash, actor="test")
    assert await conn.fetchval("SELECT count(*) FROM tables") == before
    again = await service.plan(conn, "crm", document)
    assert not again.changes_anything
