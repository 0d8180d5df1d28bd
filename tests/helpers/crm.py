"""A populated `crm` scope built through the catalog API (no IaC), for export and the
round trip. It mirrors tests/api/test_catalog.py's GraphQL builder: tables Companies and
Contacts, columns of every type (a reference from Contacts to Companies), a rule, a
trigger, a view, a grant, client access, a command, an insight selection, a public read
and records (contacts point at their company)."""

from typing import Any

import asyncpg

from app.catalog import resources
from app.catalog.records import insert_record
from app.catalog.scopes import create_scope

CHATROOM = "5f0c1d2e-3a4b-4c5d-8e6f-708192a3b4c5"
COMPANIES = ("Acme", "Globex", "Initech")
CONTACTS = 6


async def build_crm(conn: asyncpg.Connection, slug: str = "crm") -> dict[str, str]:
    """Build the scope; returns its ID under "scope" and every live resource's ID under
    the qualified ref an export of it generates (`contacts`, `contacts.email`,
    `contacts.grant:team:sales`, `command:sync`, `insight.{CHATROOM}`, ...)."""
    ids: dict[str, str] = {}

    async def create(kind: str, parent: str, spec: dict[str, Any], ref: str) -> dict[str, Any]:
        resource = await resources.create(conn, kind, parent, spec)
        ids[ref] = resource["id"]
        return resource

    scope = await create_scope(conn, slug, "CRM")
    ids["scope"] = scope["id"]
    companies = await create(
        "table", scope["id"], {"name": "Companies", "tags": ["sales"]}, "companies"
    )
    contacts = await create(
        "table",
        scope["id"],
        {"name": "Contacts", "description": "People", "settings": {"color": "blue"}},
        "contacts",
    )
    await create(
        "column",
        companies["id"],
        {"name": "Name", "type": "text", "required": True, "unique": True},
        "companies.name",
    )
    email = await create(
        "column",
        contacts["id"],
        {"name": "Email", "type": "text", "required": True, "unique": True},
        "contacts.email",
    )
    for ref, spec in [
        ("age", {"name": "Age", "type": "number"}),
        ("vip", {"name": "VIP", "type": "boolean", "default": False}),
        ("born", {"name": "Born", "type": "date"}),
        ("seen", {"name": "Seen", "type": "datetime"}),
        ("stage", {"name": "Stage", "type": "select", "options": {"values": ["lead", "customer"]}}),
        (
            "company",
            {"name": "Company", "type": "reference", "options": {"table": companies["id"]}},
        ),
        ("profile", {"name": "Profile", "type": "json"}),
    ]:
        await create("column", contacts["id"], spec, f"contacts.{ref}")
    await create(
        "rule",
        contacts["id"],
        {"expression": "Age >= 0", "message": "no negative ages", "severity": "warning"},
        "contacts.rule",
    )
    await create(
        "trigger",
        contacts["id"],
        {"event": "insert", "action": {"notify": "#sales"}},
        "contacts.trigger",
    )
    view = await create(
        "view",
        contacts["id"],
        {"name": "Active", "columns": [email["id"]], "filter": {"Stage": "customer"}},
        "contacts.active",
    )
    await create(
        "grant",
        contacts["id"],
        {"principal": "team:sales", "permissions": ["read", "write"]},
        "contacts.grant:team:sales",
    )
    access = await resources.set_client_access(
        conn, contacts["id"], {"origins": ["https://crm.test"], "rate_limit": 60}
    )
    ids["contacts.client_access"] = access["id"]
    await create(
        "command",
        scope["id"],
        {"name": "Sync", "action": {"url": "https://x.test"}},
        "command:sync",
    )
    await create(
        "insight_selection",
        scope["id"],
        {"chatroom": CHATROOM, "tables": [contacts["id"]]},
        f"insight.{CHATROOM}",
    )
    await create(
        "public_read",
        contacts["id"],
        {"ref": "directory", "view": view["id"]},
        "contacts.directory",
    )
    company_ids = [
        (await insert_record(conn, companies["id"], {"Name": name}))["id"] for name in COMPANIES
    ]
    for i in range(CONTACTS):
        await insert_record(
            conn,
            contacts["id"],
            {
                "Email": f"p{i}@crm.test",
                "Age": 20 + i,
                "Born": "1990-01-31",
                "Seen": "2026-07-19T08:30:00+00:00",
                "Stage": "customer" if i % 2 else "lead",
                "Company": company_ids[i % len(company_ids)],
                "Profile": {"i": i, "big": 2**70},
            },
        )
    return ids
