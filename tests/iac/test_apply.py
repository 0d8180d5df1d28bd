"""Plan and apply against a real catalog: the scenarios of issue 6 / iac.md, one each."""

import re
import uuid

import asyncpg
import pytest

from app.catalog import resources
from app.catalog.records import insert_record, list_records_by_key
from app.catalog.scopes import create_scope
from app.catalog.snapshot import load_scope_snapshot
from app.errors import BadInput, Conflict, StalePlan
from app.iac import service
from app.iac.plan import Plan
from app.jsonutil import dumps, loads
from tests.helpers.edges import instance_edges

HEADER = {"kind": "header", "system": "crm", "version": 1}
CONTACTS = {
    "kind": "table",
    "ref": "contacts",
    "spec": {"name": "Contacts", "description": "People"},
}
EMAIL = {
    "kind": "column",
    "table": "contacts",
    "ref": "email",
    "spec": {"name": "Email", "type": "text", "required": True, "unique": True},
}
AGE = {
    "kind": "column",
    "table": "contacts",
    "ref": "age",
    "spec": {"name": "Age", "type": "number"},
}
ADULTS = {
    "kind": "view",
    "table": "contacts",
    "ref": "adults",
    "spec": {"name": "Adults", "columns": ["email", "age"]},
}
SALES = {
    "kind": "grant",
    "table": "contacts",
    "principal": "sales",
    "spec": {"permissions": ["read"]},
}
DIRECTORY = {"kind": "public_read", "table": "contacts", "ref": "directory", "view": "adults"}
ADA = {"kind": "record", "table": "contacts", "key": {"email": "ada@x.io"}, "values": {"age": 36}}
BASE = [HEADER, CONTACTS, EMAIL, AGE, ADULTS, SALES, DIRECTORY, ADA]


def doc(*lines: dict) -> bytes:
    return b"\n".join(dumps(line) for line in lines) + b"\n"


def actions(plan: Plan, *kinds: str) -> dict[str, str]:
    """ref -> action, for the actions of `kinds` (all but records when none given)."""
    return {
        a.ref: a.action for a in plan.actions if (a.kind in kinds if kinds else a.kind != "record")
    }


async def plan_and_apply(conn, lines: list[dict], scope: str = "crm") -> service.Applied:
    plan = await service.plan(conn, scope, doc(*lines))
    return await service.apply(conn, scope, doc(*lines), plan.hash, actor="test")


async def state_rows(conn, system: str = "crm") -> dict[str, dict]:
    return {r["ref"]: r for r in await service.state(conn, "crm", system)}


async def live(conn, *, reveal: bool = True) -> dict[str, dict]:
    scope = await conn.fetchval("SELECT id FROM scopes WHERE slug = 'crm'")
    return {r["id"]: r for r in await load_scope_snapshot(conn, scope, reveal=reveal)}


async def applied_spec(conn, ref: str) -> dict:
    return await conn.fetchval("SELECT last_applied_spec FROM iac_state WHERE ref = $1", ref)


@pytest.fixture
async def crm(conn) -> dict:
    scope = await create_scope(conn, "crm", "CRM")
    await plan_and_apply(conn, BASE)
    return scope


async def test_first_apply_creates_everything_then_everything_is_noop(conn) -> None:
    await create_scope(conn, "crm", "CRM")
    plan = await service.plan(conn, "crm", doc(*BASE))
    assert plan.summary == {**dict.fromkeys(plan.summary, 0), "create": 6, "insert": 1}
    assert list(actions(plan)) == [
        "contacts",
        "contacts.email",
        "contacts.age",
        "contacts.adults",
        "contacts.grant:sales",
        "contacts.directory",
    ]
    applied = await service.apply(conn, "crm", doc(*BASE), plan.hash, actor="test")
    assert (applied.state_name, applied.serial) == ("iac:crm/crm", 1)

    rows = await state_rows(conn)
    resources_now = await live(conn)
    table = resources_now[rows["contacts"]["resource_id"]]
    assert table["name"] == "Contacts" and "system:crm" in table["tags"]
    assert table["settings"]["iac"] == {"system": "crm", "ref": "contacts"}
    email = resources_now[rows["contacts.email"]["resource_id"]]
    assert email["table_id"] == table["id"] == rows["contacts.email"]["table_id"]
    view = resources_now[rows["contacts.adults"]["resource_id"]]
    assert view["columns"] == [email["id"], rows["contacts.age"]["resource_id"]]
    age = resources_now[rows["contacts.age"]["resource_id"]]
    [record] = (await list_records_by_key(conn, [table["id"]]))[table["id"]]
    assert record["values"] == {email["key"]: "ada@x.io", age["key"]: 36}

    again = await service.plan(conn, "crm", doc(*BASE))
    assert set(actions(again).values()) == {"noop"} and actions(again, "record") == {
        'contacts {"email":"ada@x.io"}': "skip"
    }
    assert not again.changes_anything
    second = await service.apply(conn, "crm", doc(*BASE), again.hash, actor="test")
    assert second.serial == 1  # nothing changed, no new version


async def test_each_apply_is_a_graph_version_with_reference_edges(conn, crm) -> None:
    version = await conn.fetchrow(
        """SELECT v.id, s.kind FROM state_versions v JOIN states s ON s.id = v.state_id
           WHERE s.name = 'iac:crm/crm'"""
    )
    assert version["kind"] == "iac"
    addresses = {
        r["address"]: r["type"]
        for r in await conn.fetch(
            "SELECT address, type FROM resources WHERE state_version_id = $1", version["id"]
        )
    }
    assert addresses["contacts.email"] == "column" and addresses["contacts"] == "table"
    edges = {(a, b) for a, b, _ in await instance_edges(conn, "iac:crm/crm")}
    assert {
        ("contacts.email", "contacts"),
        ("contacts.adults", "contacts.email"),
        ("contacts.adults", "contacts.age"),
        ("contacts.directory", "contacts.adults"),
        ("contacts.grant:sales", "contacts"),
    } <= edges
    events = await conn.fetch("SELECT action, actor FROM events WHERE state_name = 'iac:crm/crm'")
    assert [(e["action"], e["actor"]) for e in events] == [("apply", "test")]


async def test_drift_on_a_managed_field_is_shown_and_restored(conn, crm) -> None:
    rows = await state_rows(conn)
    age_id = rows["contacts.age"]["resource_id"]
    await resources.update(conn, "column", age_id, {"name": "Years"})
    plan = await service.plan(conn, "crm", doc(*BASE))
    [action] = [a for a in plan.actions if a.action != "noop" and a.kind != "record"]
    assert (action.action, action.ref) == ("update", "contacts.age")
    [change] = action.changes
    assert (change.field, change.desired, change.last_applied, change.live, change.reason) == (
        "name",
        "Age",
        "Age",
        "Years",
        "drift",
    )
    await service.apply(conn, "crm", doc(*BASE), plan.hash, actor="test")
    assert (await live(conn))[age_id]["name"] == "Age"


async def test_a_change_to_an_unmanaged_field_shows_nothing(conn, crm) -> None:
    rows = await state_rows(conn)
    await resources.update(conn, "column", rows["contacts.age"]["resource_id"], {"default": 18})
    plan = await service.plan(conn, "crm", doc(*BASE))
    assert not plan.changes_anything


async def test_intent_and_both(conn, crm) -> None:
    rows = await state_rows(conn)
    await resources.update(conn, "column", rows["contacts.age"]["resource_id"], {"name": "Years"})
    renamed = {**AGE, "spec": {**AGE["spec"], "name": "Age (years)"}}
    described = {**CONTACTS, "spec": {**CONTACTS["spec"], "description": "Everyone"}}
    plan = await service.plan(conn, "crm", doc(HEADER, described, EMAIL, renamed))
    reasons = {a.ref: [c.reason for c in a.changes] for a in plan.actions if a.action == "update"}
    assert reasons == {"contacts": ["intent"], "contacts.age": ["both"]}


async def test_an_omitted_field_keeps_its_live_value_and_is_no_longer_managed(conn, crm) -> None:
    bare = {**CONTACTS, "spec": {"name": "Contacts"}}
    plan = await service.plan(conn, "crm", doc(HEADER, bare, EMAIL, AGE, ADULTS, SALES, DIRECTORY))
    assert actions(plan)["contacts"] == "noop"
    await service.apply(
        conn, "crm", doc(HEADER, bare, EMAIL, AGE, ADULTS, SALES, DIRECTORY), plan.hash, actor="t"
    )
    rows = await state_rows(conn)
    assert (await live(conn))[rows["contacts"]["resource_id"]]["description"] == "People"
    assert await applied_spec(conn, "contacts") == {"name": "Contacts"}


async def test_a_missing_line_deletes_nothing(conn, crm) -> None:
    before = await live(conn)
    plan = await service.plan(conn, "crm", doc(HEADER, CONTACTS, EMAIL, AGE))
    assert plan.summary["delete"] == 0 and set(actions(plan).values()) == {"noop"}
    await service.apply(conn, "crm", doc(HEADER, CONTACTS, EMAIL, AGE), plan.hash, actor="t")
    assert (await live(conn)).keys() == before.keys()
    assert {"contacts.adults", "contacts.directory", "contacts.grant:sales"} <= set(
        await state_rows(conn)
    )


async def test_an_orphan_is_reported_and_cleaned_and_tag_sync_survives_it(conn, crm) -> None:
    companies = {"kind": "table", "ref": "companies", "spec": {"name": "Companies"}}
    name = {
        "kind": "column",
        "table": "companies",
        "ref": "name",
        "spec": {"name": "Name", "type": "text"},
    }
    await plan_and_apply(conn, [*BASE, companies, name])
    gone = (await state_rows(conn))["companies"]["resource_id"]
    await resources.delete(conn, "table", gone)  # through the ordinary API

    plan = await service.plan(conn, "crm", doc(*BASE))
    assert {a.ref: a.action for a in plan.actions if a.action == "orphaned"} == {
        "companies": "orphaned",
        "companies.name": "orphaned",
    }
    applied = await service.apply(conn, "crm", doc(*BASE), plan.hash, actor="t")  # first apply
    assert applied.serial == 3
    assert not {"companies", "companies.name"} & set(await state_rows(conn))
    assert not (await service.plan(conn, "crm", doc(*BASE))).changes_anything


async def test_a_still_declared_orphan_is_repaired_by_a_create(conn, crm) -> None:
    rows = await state_rows(conn)
    await resources.delete(conn, "grant", rows["contacts.grant:sales"]["resource_id"])
    plan = await service.plan(conn, "crm", doc(*BASE))
    grant = [a.action for a in plan.actions if a.ref == "contacts.grant:sales"]
    assert grant == ["orphaned", "create"]
    await service.apply(conn, "crm", doc(*BASE), plan.hash, actor="t")
    new = (await state_rows(conn))["contacts.grant:sales"]["resource_id"]
    assert new != rows["contacts.grant:sales"]["resource_id"]
    assert (await live(conn))[new]["principal"] == "sales"


async def test_absent_deletes_and_only_absent_deletes(conn, crm) -> None:
    rows = await state_rows(conn)
    gone = {"kind": "public_read", "table": "contacts", "ref": "directory", "state": "absent"}
    revoked = {"kind": "grant", "table": "contacts", "principal": "sales", "state": "absent"}
    lines = [HEADER, CONTACTS, EMAIL, AGE, ADULTS, revoked, gone]
    plan = await service.plan(conn, "crm", doc(*lines))
    assert {r: a for r, a in actions(plan).items() if a == "delete"} == {
        "contacts.grant:sales": "delete",
        "contacts.directory": "delete",
    }
    await service.apply(conn, "crm", doc(*lines), plan.hash, actor="t")
    now = await live(conn)
    assert rows["contacts.directory"]["resource_id"] not in now
    assert rows["contacts.grant:sales"]["resource_id"] not in now
    assert not {"contacts.directory", "contacts.grant:sales"} & set(await state_rows(conn))


async def test_absent_with_a_spec_is_refused_on_a_column(conn, crm) -> None:
    absent = {**AGE, "state": "absent"}
    with pytest.raises(BadInput) as error:
        await service.plan(conn, "crm", doc(HEADER, CONTACTS, absent))
    [problem] = error.value.detail["errors"]
    assert problem["line"] == 3 and problem["ref"] == "contacts.age"


async def test_an_absent_table_with_a_spec_adopts_then_deletes(conn, crm) -> None:
    scope = await conn.fetchval("SELECT id FROM scopes WHERE slug = 'crm'")
    legacy = await resources.create(conn, "table", scope, {"name": "Legacy"})
    line = {"kind": "table", "ref": "legacy", "state": "absent", "spec": {"name": "Legacy"}}
    plan = await service.plan(conn, "crm", doc(HEADER, line))
    [action] = plan.actions
    assert (action.action, action.ref, action.reason) == (
        "delete",
        "legacy",
        "state: absent (adopted, then deleted)",
    )
    await service.apply(conn, "crm", doc(HEADER, line), plan.hash, actor="t")
    assert legacy["id"] not in await live(conn)


async def test_renamed_from_keeps_the_live_ids_and_the_records(conn, crm) -> None:
    rows = await state_rows(conn)
    people = {**CONTACTS, "ref": "people", "renamed_from": "contacts"}
    mail = {**EMAIL, "table": "people", "ref": "mail", "renamed_from": "email"}
    age = {**AGE, "table": "people"}
    lines = [HEADER, people, mail, age]
    plan = await service.plan(conn, "crm", doc(*lines))
    assert actions(plan) == {"people": "move", "people.mail": "move", "people.age": "move"}
    await service.apply(conn, "crm", doc(*lines), plan.hash, actor="t")
    after = await state_rows(conn)
    assert after["people"]["resource_id"] == rows["contacts"]["resource_id"]
    assert after["people.mail"]["resource_id"] == rows["contacts.email"]["resource_id"]
    assert "contacts" not in after and "contacts.email" not in after
    table = rows["contacts"]["resource_id"]
    assert len((await list_records_by_key(conn, [table]))[table]) == 1
    assert not (await service.plan(conn, "crm", doc(*lines))).changes_anything
    # sub-resources the document left out followed their table to its new ref
    assert after["people.adults"]["resource_id"] == rows["contacts.adults"]["resource_id"]
    assert after["people.grant:sales"]["resource_id"] == rows["contacts.grant:sales"]["resource_id"]
    assert not [ref for ref in after if ref.startswith("contacts")]


async def test_two_systems_may_not_claim_one_table(conn, crm) -> None:
    ops = [{"kind": "header", "system": "ops", "version": 1}, CONTACTS]
    with pytest.raises(Conflict, match=r"managed by system 'crm'") as error:
        await service.plan(conn, "crm", doc(*ops))
    assert error.value.detail["errors"][0]["line"] == 2


async def test_a_stale_hash_is_refused_and_changes_nothing(conn, crm) -> None:
    changed = {**AGE, "spec": {**AGE["spec"], "name": "Years"}}
    plan = await service.plan(conn, "crm", doc(HEADER, CONTACTS, EMAIL, changed))
    rows = await state_rows(conn)
    await resources.update(conn, "column", rows["contacts.age"]["resource_id"], {"required": True})
    await resources.update(conn, "column", rows["contacts.email"]["resource_id"], {"name": "Mail"})
    with pytest.raises(StalePlan):
        await service.apply(
            conn, "crm", doc(HEADER, CONTACTS, EMAIL, changed), plan.hash, actor="t"
        )
    assert (await live(conn))[rows["contacts.age"]["resource_id"]]["name"] == "Age"
    # and a second apply of one reviewed plan is stale, never a double create
    grant = {
        "kind": "grant",
        "table": "contacts",
        "principal": "ops",
        "spec": {"permissions": ["read"]},
    }
    fresh = await service.plan(conn, "crm", doc(*BASE, grant))
    await service.apply(conn, "crm", doc(*BASE, grant), fresh.hash, actor="t")
    with pytest.raises(StalePlan):
        await service.apply(conn, "crm", doc(*BASE, grant), fresh.hash, actor="t")


async def test_corrupted_state_warns_and_never_acts_on_the_wrong_kind(conn, crm) -> None:
    rows = await state_rows(conn)
    scope = await conn.fetchval("SELECT id FROM scopes WHERE slug = 'crm'")
    bogus = str(uuid.uuid4())
    await conn.execute(
        """INSERT INTO iac_state (scope_id, system, resource_type, ref, resource_id, table_id)
           VALUES ($1, 'crm', 'rule', 'contacts.email', $2, $3)""",
        scope,
        bogus,
        uuid.UUID(rows["contacts"]["table_id"]),
    )
    plan = await service.plan(conn, "crm", doc(*BASE))
    assert any("contacts.email" in w and "rule" in w for w in plan.warnings)
    assert actions(plan)["contacts.email"] == "noop" and plan.summary["orphaned"] == 0
    await service.apply(conn, "crm", doc(*BASE), plan.hash, actor="t")
    kinds = await conn.fetch("SELECT resource_type FROM iac_state WHERE ref = 'contacts.email'")
    assert sorted(k["resource_type"] for k in kinds) == ["column", "rule"]


async def test_an_apply_that_fails_halfway_changes_nothing(conn, crm) -> None:
    before_live = await live(conn)
    before_state = await conn.fetch("SELECT * FROM iac_state ORDER BY ref")
    table = (await state_rows(conn))["contacts"]["resource_id"]
    before_records = await list_records_by_key(conn, [table])
    boss = {
        "kind": "column",
        "table": "contacts",
        "ref": "boss",
        "spec": {"name": "Boss", "type": "reference", "options": {"target": "contacts"}},
    }
    bob = {"kind": "record", "table": "contacts", "key": {"email": "bob@x.io"}}
    sales = {**SALES, "spec": {"permissions": ["read", "write"]}}
    lines = [HEADER, CONTACTS, EMAIL, AGE, ADULTS, sales, DIRECTORY, boss, ADA, bob]
    plan = await service.plan(conn, "crm", doc(*lines))
    assert plan.summary["create"] == 1 and plan.summary["update"] == 1
    # Whatever plans cleanly applies, so the failure comes from the database itself: it
    # refuses the record, after the column was created and the grant changed.
    await conn.execute(
        """CREATE FUNCTION refuse_record() RETURNS trigger LANGUAGE plpgsql AS
           $$ BEGIN RAISE EXCEPTION 'no records today'; END $$;
           CREATE TRIGGER refuse_record BEFORE INSERT ON records
           FOR EACH ROW EXECUTE FUNCTION refuse_record()"""
    )
    try:
        with pytest.raises(asyncpg.RaiseError, match="no records today"):
            await service.apply(conn, "crm", doc(*lines), plan.hash, actor="t")
    finally:
        await conn.execute("DROP FUNCTION refuse_record() CASCADE")
    assert await live(conn) == before_live
    assert await conn.fetch("SELECT * FROM iac_state ORDER BY ref") == before_state
    assert await list_records_by_key(conn, [table]) == before_records
    assert await conn.fetchval("SELECT count(*) FROM state_versions") == 1


async def test_record_lines_insert_missing_keys_and_skip_existing_ones(conn, crm) -> None:
    rows = await state_rows(conn)
    table = rows["contacts"]["resource_id"]
    await insert_record(conn, table, {"Email": "grace@x.io", "Age": 45})
    grace = {"kind": "record", "table": "contacts", "key": {"email": "grace@x.io"}}
    alan = {"kind": "record", "table": "contacts", "key": {"email": "alan@x.io"}}
    plan = await service.plan(conn, "crm", doc(*BASE, grace, alan))
    assert actions(plan, "record") == {
        'contacts {"email":"ada@x.io"}': "skip",
        'contacts {"email":"grace@x.io"}': "skip",
        'contacts {"email":"alan@x.io"}': "insert",
    }
    await service.apply(conn, "crm", doc(*BASE, grace, alan), plan.hash, actor="t")
    values = [loads(dumps(r["values"])) for r in (await list_records_by_key(conn, [table]))[table]]
    assert len(values) == 3


async def test_plans_are_deterministic(conn, crm) -> None:
    first = await service.plan(conn, "crm", doc(*BASE))
    second = await service.plan(conn, "crm", doc(*BASE))
    assert first == second and first.hash == second.hash


async def test_secrets_reach_live_but_never_the_state(conn, crm) -> None:
    settings = {"color": "red", "webhook": {"url": "https://x.test", "token": "s3cr3t"}}
    secret = {**CONTACTS, "spec": {**CONTACTS["spec"], "settings": settings}}
    await plan_and_apply(conn, [HEADER, secret, EMAIL])
    rows = await state_rows(conn)
    assert (await live(conn))[rows["contacts"]["resource_id"]]["settings"]["webhook"] == {
        "url": "https://x.test",
        "token": "s3cr3t",
    }
    shown = (await live(conn, reveal=False))[rows["contacts"]["resource_id"]]["settings"]
    assert shown["webhook"] == {"url": "https://x.test", "token": "(secret)"}
    in_clear = "SELECT count(*) FROM tables WHERE settings::text LIKE '%s3cr3t%'"
    assert await conn.fetchval(in_clear) == 0
    remembered = await applied_spec(conn, "contacts")
    sealed = remembered["settings"]["webhook"].pop("token")
    assert remembered["settings"] == {"color": "red", "webhook": {"url": "https://x.test"}}
    assert re.fullmatch(r"hmac-sha256:[0-9a-f]{64}", sealed)
    assert (
        await conn.fetchval(
            "SELECT count(*) FROM iac_state WHERE last_applied_spec::text LIKE '%s3cr3t%'"
        )
        == 0
    )
    assert not (await service.plan(conn, "crm", doc(HEADER, secret, EMAIL))).changes_anything


async def test_secret_hashes_follow_the_configured_key(conn, crm) -> None:
    def hooked(url: str) -> list[dict]:
        settings = {"webhook": {"url": url, "token": "s3cr3t"}}
        return [HEADER, {**CONTACTS, "spec": {**CONTACTS["spec"], "settings": settings}}]

    lines = hooked("https://a.test")
    planned = await service.plan(conn, "crm", doc(*lines), secret_key="key-one")
    await service.apply(conn, "crm", doc(*lines), planned.hash, actor="t", secret_key="key-one")
    remembered = (await applied_spec(conn, "contacts"))["settings"]["webhook"]["token"]
    assert remembered != "s3cr3t" and "s3cr3t" not in remembered

    async def reason(key: str | None) -> str:
        [action] = (
            await service.plan(conn, "crm", doc(*hooked("https://b.test")), secret_key=key)
        ).actions
        return action.reason

    assert await reason("key-one") == "intent"
    assert await reason("key-two") == "both"  # another key: the hash no longer matches
    assert await reason(None) == "both"  # the database's key is another one too
