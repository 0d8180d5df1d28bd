"""The IaC seed's rules end to end through GraphQL (issue 15): every token a plan accepts
resolves to exactly one resource and apply never fails on it; orphans never resolve to
dead IDs and apply heals; an export plans back into its own scope as adopt/noop only;
two systems racing for one table: exactly one wins."""

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from app.jsonutil import dumps
from tests.helpers.graphql import gql, post

SLUG = "crm"
CHATROOM = "5f0c1d2e-3a4b-4c5d-8e6f-708192a3b4c5"
PLAN = """mutation($scope: String!, $document: String!) {
  plan(scope: $scope, document: $document) {
    hash summary { create update delete move adopt orphaned noop insert skip }
    actions { action kind ref reason }
  }
}"""
APPLY = """mutation($scope: String!, $document: String!, $hash: String!) {
  apply(scope: $scope, document: $document, hash: $hash) { summary { create } }
}"""
EXPORT = "query($scope: String!, $system: String!) { export(scope: $scope, system: $system) }"
STATE = """query($scope: String!, $system: String) {
  iacState(scope: $scope, system: $system) { system resourceType ref resourceId }
}"""


def header(system: str = "crm") -> dict[str, Any]:
    return {"kind": "header", "system": system, "version": 1}


def table(ref: str, name: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"kind": "table", "ref": ref, "spec": {"name": name or ref.title()}, **extra}


def column(table: str, ref: str, **spec: Any) -> dict[str, Any]:
    return {
        "kind": "column",
        "table": table,
        "ref": ref,
        "spec": {"name": ref.title(), "type": "text", **spec},
    }


def document(*lines: dict[str, Any]) -> str:
    return "".join(dumps(line).decode() + "\n" for line in lines)


async def plan(client: httpx.AsyncClient, text: str, scope: str = SLUG) -> dict[str, Any]:
    """The plan, or the GraphQL error (with its code and messages) when it is refused."""
    body = await post(client, PLAN, {"scope": scope, "document": text})
    if "errors" in body:
        [error] = body["errors"]
        detail = error["extensions"].get("detail") or {}
        messages = [e["message"] for e in detail.get("errors", [])] or [error["message"]]
        return {"code": error["extensions"]["code"], "messages": messages}
    return body["data"]["plan"]


async def plan_and_apply(client: httpx.AsyncClient, text: str, scope: str = SLUG) -> dict[str, Any]:
    planned = await plan(client, text, scope)
    assert "hash" in planned, planned
    await gql(client, APPLY, {"scope": scope, "document": text, "hash": planned["hash"]})
    return planned


def actions(planned: dict[str, Any]) -> dict[tuple[str, str], str]:
    return {(a["kind"], a["ref"]): a["action"] for a in planned["actions"]}


async def state(client: httpx.AsyncClient, system: str = "crm", scope: str = SLUG) -> dict:
    rows = (await gql(client, STATE, {"scope": scope, "system": system}))["iacState"]
    return {row["ref"]: row["resourceId"] for row in rows}


async def delete(client: httpx.AsyncClient, kind: str, resource_id: str) -> None:
    await gql(client, f"mutation($id: ID!) {{ delete{kind}(id: $id) }}", {"id": resource_id})


async def create_scope(client: httpx.AsyncClient, slug: str = SLUG) -> None:
    await gql(
        client, "mutation($s: String!) { createScope(slug: $s, name: $s) { id } }", {"s": slug}
    )


@pytest.fixture
async def http(client: httpx.AsyncClient) -> httpx.AsyncClient:
    await create_scope(client)
    return client


async def assert_converged(client: httpx.AsyncClient, text: str) -> None:
    """The document applied: planning it again changes nothing."""
    again = await plan(client, text)
    assert {a["action"] for a in again["actions"]} <= {"noop", "skip"}, again


# --- 1. every token resolves to exactly one resource; apply never fails on a plan ------


@pytest.mark.parametrize("token", ["nosuch", "col_1a2b3c"])
async def test_a_view_of_an_undeclared_column_is_refused_at_plan(http, token) -> None:
    text = document(
        header(),
        table("contacts"),
        column("contacts", "email"),
        {
            "kind": "view",
            "table": "contacts",
            "ref": "v",
            "spec": {"name": "V", "columns": [token]},
        },
    )
    refused = await plan(http, text)
    assert refused["code"] == "BAD_INPUT"
    assert refused["messages"] == [
        f"column contacts.{token} is neither declared in this document nor managed by system 'crm'"
    ]


async def test_a_managed_column_left_out_of_the_document_still_resolves(http) -> None:
    await plan_and_apply(http, document(header(), table("contacts"), column("contacts", "email")))
    view = {"kind": "view", "table": "contacts", "ref": "v", "spec": {"columns": ["email"]}}
    text = document(header(), table("contacts"), view)
    await plan_and_apply(http, text)
    await assert_converged(http, text)


async def test_a_new_rule_under_the_ref_a_moved_column_takes_is_refused(http) -> None:
    await plan_and_apply(http, document(header(), table("contacts"), column("contacts", "x")))
    renamed = table("people", "Contacts", renamed_from="contacts")
    rule = {"kind": "rule", "table": "people", "ref": "x", "spec": {"expression": "true"}}
    refused = await plan(http, document(header(), renamed, rule))
    assert refused["code"] == "BAD_INPUT"
    assert refused["messages"][0].startswith(
        "people.x is also the new ref of the column contacts.x, which follows its table"
    )
    # the column follows its renamed table: a view of the new table may name it there
    view = {"kind": "view", "table": "people", "ref": "v", "spec": {"columns": ["x"]}}
    text = document(header(), renamed, view)
    planned = await plan_and_apply(http, text)
    assert actions(planned)["table", "people"] == "move"
    assert set(await state(http)) == {"people", "people.x", "people.v"}
    # the old refs are gone: naming one is refused, not resolved to the moved resource
    old = {"kind": "view", "table": "people", "ref": "w", "spec": {"columns": ["x"]}}
    stale = document(header(), table("people", "Contacts"), old, column("contacts2", "y"))
    assert (await plan(http, stale))["code"] == "BAD_INPUT"
    await assert_converged(http, text)


# --- 3. orphans never resolve to dead IDs, and apply heals -----------------------------


async def test_an_insight_selection_of_a_table_deleted_elsewhere(http) -> None:
    selection = {"kind": "insight_selection", "chatroom": CHATROOM, "tables": ["a", "b"]}
    await plan_and_apply(http, document(header(), table("a"), table("b"), selection))
    await delete(http, "Table", (await state(http))["b"])

    refused = await plan(http, document(header(), table("a"), selection))
    assert refused["code"] == "BAD_INPUT"
    assert "table b is managed by system 'crm' but its live resource" in refused["messages"][0]

    # declared again: re-created, and the selection names the new table
    text = document(header(), table("a"), table("b"), selection)
    planned = await plan_and_apply(http, text)
    assert actions(planned)["table", "b"] == "create"
    await assert_converged(http, text)
    ids = await state(http)
    [live] = (await gql(http, '{ scope(slug: "crm") { insightSelections { tables { id } } } }'))[
        "scope"
    ]["insightSelections"]
    assert [t["id"] for t in live["tables"]] == [ids["a"], ids["b"]]

    # or left out of the document and of the selection: the orphan is cleaned up
    await delete(http, "Table", ids["b"])
    text = document(header(), table("a"), {**selection, "tables": ["a"]})
    planned = await plan_and_apply(http, text)
    assert actions(planned)["table", "b"] == "orphaned"
    assert set(await state(http)) == {"a", f"insight.{CHATROOM}"}
    await assert_converged(http, text)


async def test_sub_resources_of_a_table_deleted_elsewhere(http) -> None:
    lines = [
        header(),
        table("companies"),
        table("contacts"),
        column("contacts", "email"),
        column("contacts", "company", type="reference", options={"target": "companies"}),
    ]
    await plan_and_apply(http, document(*lines))
    await delete(http, "Column", (await state(http))["contacts.company"])
    await delete(http, "Table", (await state(http))["companies"])

    # a reference to the dead table, without declaring it: refused at plan
    refused = await plan(http, document(*lines[:1], *lines[2:]))
    assert "table companies is managed by system 'crm' but its live" in refused["messages"][0]
    # a column in the dead table, without declaring the table: refused at plan
    orphan_column = document(header(), column("companies", "name"))
    assert "table companies is managed" in (await plan(http, orphan_column))["messages"][0]
    # declared again: both re-created, the reference pointing at the new table
    text = document(*lines, column("companies", "name"))
    await plan_and_apply(http, text)
    await assert_converged(http, text)


async def test_a_view_of_a_column_deleted_elsewhere(http) -> None:
    view = {
        "kind": "view",
        "table": "contacts",
        "ref": "v",
        "spec": {"name": "V", "columns": ["email", "age"]},
    }
    lines = [header(), table("contacts"), column("contacts", "email"), column("contacts", "age")]
    await plan_and_apply(http, document(*lines, view))
    await delete(http, "Column", (await state(http))["contacts.age"])

    refused = await plan(http, document(*lines[:3], view))
    assert "column contacts.age is managed by system 'crm' but its live" in refused["messages"][0]
    text = document(*lines, view)
    planned = await plan_and_apply(http, text)
    assert actions(planned)["column", "contacts.age"] == "create"
    assert actions(planned)["view", "contacts.v"] == "update"
    await assert_converged(http, text)


async def test_a_reference_value_names_exactly_one_record(http) -> None:
    lines = [
        header(),
        table("companies"),
        column("companies", "name", unique=True),
        table("contacts"),
        column("contacts", "email"),
        column("contacts", "company", type="reference", options={"target": "companies"}),
    ]

    def contact(email: str, company: dict[str, Any]) -> dict[str, Any]:
        values = {"company": company}
        return {"kind": "record", "table": "contacts", "key": {"email": email}, "values": values}

    acme = {"kind": "record", "table": "companies", "key": {"name": "Acme"}}
    for wrong, message in [
        ({"name": "Nope"}, 'the reference {"name":"Nope"} matches 0 records of table companies'),
        ({"nosuch": "Acme"}, "companies.nosuch is not a column of table companies"),
    ]:
        refused = await plan(http, document(*lines, acme, contact("a@x", wrong)))
        assert refused["code"] == "BAD_INPUT" and message in refused["messages"][0], refused
    text = document(*lines, acme, contact("a@x", {"name": "Acme"}))
    await plan_and_apply(http, text)
    await assert_converged(http, text)
    # the company is live now: a later document refers to it without declaring it again
    await plan_and_apply(http, document(*lines, contact("b@x", {"name": "Acme"})))


async def test_records_fit_required_and_unique_columns_at_plan(http) -> None:
    """What the catalog would refuse on apply is refused by the plan, naming the line."""
    base = [header(), table("contacts"), column("contacts", "email", unique=True)]
    lines = [*base, column("contacts", "tag")]

    def record(key: str, **values: Any) -> dict[str, Any]:
        return {"kind": "record", "table": "contacts", "key": {"email": key}, "values": values}

    await plan_and_apply(http, document(*lines, record("a@x", tag="t"), record("b@x", tag="t")))
    boss = column("contacts", "boss", type="reference", options={"target": "contacts"})
    nobody = "5f0c1d2e-3a4b-4c5d-8e6f-708192a3b4c5"
    refusals = [
        (
            [column("contacts", "name", required=True)],
            "column 'Name' cannot be required: 2 live record(s) of table contacts have no value",
        ),
        (
            [column("contacts", "tag", unique=True)],
            "column 'Tag' cannot be unique: live records of table contacts repeat a value",
        ),
        (
            [column("contacts", "tag", required=True, default="?"), record("c@x", tag=None)],
            "column 'Tag' of table contacts is required and has no value",
        ),
        (
            [
                column("contacts", "team", unique=True),
                record("c@x", team="x"),
                record("d@x", team="x"),
            ],
            "column 'Team' of table contacts is unique: 'x' repeats",
        ),
        ([column("contacts", "tag", type="number")], "does not fit: must be a number"),
        (
            [column("contacts", "tag", type="select", options={"values": ["u"]})],
            'does not fit: "t" is not one of the select options.values',
        ),
        (
            [boss, record("c@x", boss=nobody)],
            f"column 'Boss': no record {nobody} in the referenced table",
        ),
    ]
    for extra, message in refusals:
        refused = await plan(http, document(*base, *extra))
        assert refused["code"] == "BAD_INPUT", (extra, refused)
        assert any(message in m for m in refused["messages"]), refused
    # what fits applies
    text = document(*lines, column("contacts", "name", default="?"), record("c@x", tag="u"))
    await plan_and_apply(http, text)
    await assert_converged(http, text)


async def test_a_public_read_declared_again_after_its_view_was_deleted(http) -> None:
    view = {"kind": "view", "table": "contacts", "ref": "v", "spec": {"name": "V"}}
    public = {"kind": "public_read", "table": "contacts", "ref": "open", "view": "v"}
    text = document(header(), table("contacts"), view, public)
    await plan_and_apply(http, text)
    await delete(http, "View", (await state(http))["contacts.v"])

    refused = await plan(http, document(header(), table("contacts"), public))
    assert "view contacts.v is managed by system 'crm' but its live" in refused["messages"][0]
    await plan_and_apply(http, text)
    await assert_converged(http, text)


# --- claims: one table, one owner, across the systems of a scope ------------------------


@pytest.mark.parametrize("existing", [False, True], ids=["create", "adopt"])
async def test_two_systems_racing_for_one_table_exactly_one_wins(http, existing) -> None:
    if existing:
        await gql(http, 'mutation { createTable(scope: "crm", input: {name: "People"}) { id } }')
    texts = {system: document(header(system), table("people")) for system in ("crm", "billing")}
    plans = {system: await plan(http, text) for system, text in texts.items()}
    assert {actions(p)["table", "people"] for p in plans.values()} == {
        "adopt" if existing else "create"
    }
    bodies = await asyncio.gather(
        *(
            post(http, APPLY, {"scope": SLUG, "document": texts[s], "hash": plans[s]["hash"]})
            for s in texts
        )
    )
    won = [s for s, body in zip(texts, bodies, strict=True) if "errors" not in body]
    lost = [body["errors"][0]["extensions"]["code"] for body in bodies if "errors" in body]
    assert len(won) == 1 and lost in (["CONFLICT"], ["STALE_PLAN"]), bodies
    [winner] = won
    loser = "billing" if winner == "crm" else "crm"
    live = await gql(http, '{ scope(slug: "crm") { tables { id name } } }')
    [people] = live["scope"]["tables"]
    assert await state(http, winner) == {"people": people["id"]}
    assert await state(http, loser) == {}
    # planned again, the loser is told who holds it
    refused = await plan(http, texts[loser])
    assert refused["code"] == "CONFLICT"
    assert f"managed by system {winner!r} as people" in refused["messages"][0]


# --- 4. an export plans back into its own scope as adopt/noop, into an empty one as create


async def test_an_export_of_a_public_read_beside_a_view_of_its_name_adopts_both(http) -> None:
    created = await gql(
        http, 'mutation { createTable(scope: "crm", input: {name: "People"}) { id } }'
    )
    people = created["createTable"]["id"]
    view = await gql(
        http,
        'mutation($t: ID!) { a: createView(table: $t, input: {name: "Active"}) { id }'
        " b: createView(table: $t, input: {}) { id } }",
        {"t": people},
    )
    await gql(
        http,
        'mutation($t: ID!, $v: ID!) { createPublicRead(table: $t, input: {ref: "active", '
        "view: $v}) { id } }",
        {"t": people, "v": view["a"]["id"]},
    )
    exported = (await gql(http, EXPORT, {"scope": SLUG, "system": "crm"}))["export"]
    assert '"kind":"public_read","table":"people","ref":"active"' in exported.replace(" ", "")
    planned = await plan(http, exported)
    assert set(actions(planned).values()) == {"adopt"}, planned


SEVERITIES = ("ERROR", "WARNING", "INFO")
TYPES = ("TEXT", "NUMBER", "BOOLEAN")


@st.composite
def scopes(draw: st.DrawFn) -> dict[str, Any]:
    """A scope as a list of tables (names may repeat) with their sub-resources, and the
    scope-level commands and insight selections: what `build` creates through GraphQL."""
    names = st.sampled_from(["People", "people", "Orders", "Ünïcode", "1st", "client_access"])
    tables = []
    for _ in range(draw(st.integers(1, 3))):
        columns = draw(
            st.lists(
                st.tuples(
                    st.sampled_from(["Email", "Age", "Name", "View"]), st.sampled_from(TYPES)
                ),
                max_size=3,
                unique_by=lambda c: c[0],
            )
        )
        tables.append(
            {
                "name": draw(names),
                "columns": [
                    {"name": n, "type": t, "unique": draw(st.booleans())} for n, t in columns
                ],
                "reference": draw(st.booleans()),
                "rules": draw(st.lists(st.sampled_from(["true", "age > 0"]), max_size=2)),
                "triggers": draw(
                    st.lists(st.sampled_from([("INSERT", None), ("UPDATE", "x")]), max_size=2)
                ),
                "views": draw(
                    st.lists(
                        st.tuples(
                            st.sampled_from([None, "Active", "active", "Email"]), st.booleans()
                        ),
                        max_size=3,
                    )
                ),
                "grants": draw(st.lists(st.sampled_from(["sales", "team:ops"]), unique=True)),
                "client_access": draw(st.booleans()),
                "public_reads": draw(
                    st.lists(
                        st.tuples(
                            st.sampled_from(
                                ["active", "open", "email", "view", "active_2", "view_2"]
                            ),
                            st.booleans(),
                        ),
                        max_size=2,
                        unique_by=lambda p: p[0],
                    )
                ),
                "records": draw(
                    st.lists(st.sampled_from(["a", "b", "c"]), max_size=3, unique=True)
                ),
            }
        )
    return {
        "tables": tables,
        "commands": draw(st.lists(st.sampled_from(["Sync", "sync", "Sync 2"]), max_size=3)),
        "insight": draw(st.lists(st.integers(0, len(tables) - 1), max_size=2, unique=True)),
    }


async def build(client: httpx.AsyncClient, slug: str, scope: dict[str, Any]) -> None:
    """Create the scope through the ordinary GraphQL API (no IaC)."""

    async def create(field: str, parent_arg: str, parent: str, data: dict[str, Any]) -> str:
        kind = field.removeprefix("create").removeprefix("set")
        query = (
            f"mutation($p: {'String' if parent_arg == 'scope' else 'ID'}!, $i: {kind}Input!) "
            f"{{ {field}({parent_arg}: $p, input: $i) {{ id }} }}"
        )
        return (await gql(client, query, {"p": parent, "i": data}))[field]["id"]

    await create_scope(client, slug)
    table_ids = [
        await create("createTable", "scope", slug, {"name": t["name"]}) for t in scope["tables"]
    ]
    for table_id, spec in zip(table_ids, scope["tables"], strict=True):
        columns = []
        for c in spec["columns"]:
            columns.append(await create("createColumn", "table", table_id, c))
        if spec["reference"]:
            options = {"table": table_ids[0]}
            columns.append(
                await create(
                    "createColumn",
                    "table",
                    table_id,
                    {"name": "Ref", "type": "REFERENCE", "options": options},
                )
            )
        for i, expression in enumerate(spec["rules"]):
            data = {"expression": expression, "severity": SEVERITIES[i % 3]}
            await create("createRule", "table", table_id, data)
        for trigger_event, condition in spec["triggers"]:
            await create(
                "createTrigger", "table", table_id, {"event": trigger_event, "condition": condition}
            )
        views = []
        for name, with_columns in spec["views"]:
            data = {"name": name, "columns": columns[:1] if with_columns else []}
            views.append(await create("createView", "table", table_id, data))
        for principal in spec["grants"]:
            await create(
                "createGrant", "table", table_id, {"principal": principal, "permissions": ["READ"]}
            )
        if spec["client_access"]:
            await create("setClientAccess", "table", table_id, {"enabled": True})
        for ref, with_view in spec["public_reads"]:
            data = {"ref": ref, "view": views[-1] if with_view and views else None}
            await create("createPublicRead", "table", table_id, data)
        text_columns = [c["name"] for c in spec["columns"] if c["type"] == "TEXT"]
        for value in spec["records"] if text_columns else ():
            await gql(
                client,
                "mutation($t: ID!, $v: JSON!) { insertRecord(table: $t, values: $v) { id } }",
                {"t": table_id, "v": {text_columns[0]: value}},
            )
    for name in scope["commands"]:
        await create("createCommand", "scope", slug, {"name": name})
    if scope["insight"]:
        data = {"chatroom": CHATROOM, "tables": [table_ids[i] for i in scope["insight"]]}
        await create("createInsightSelection", "scope", slug, data)


@given(scope=scopes())
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
async def test_an_export_plans_back_as_adopt_and_into_an_empty_scope_as_create(
    client, scope
) -> None:
    slug = f"s{uuid.uuid4().hex[:12]}"
    await build(client, slug, scope)
    exported = (await gql(client, EXPORT, {"scope": slug, "system": "crm"}))["export"]

    back = await plan(client, exported, slug)
    assert "hash" in back, (back, exported)
    resources = {a["action"] for a in back["actions"] if a["kind"] != "record"}
    assert resources <= {"adopt", "noop"}, (back, exported)
    assert {a["action"] for a in back["actions"] if a["kind"] == "record"} <= {"skip"}

    empty = f"e{uuid.uuid4().hex[:12]}"
    await create_scope(client, empty)
    fresh = await plan_and_apply(client, exported, empty)
    assert {a["action"] for a in fresh["actions"]} <= {"create", "insert"}, (fresh, exported)
    assert len(fresh["actions"]) == len(back["actions"])
    again = await plan(client, exported, empty)
    assert {a["action"] for a in again["actions"]} <= {"noop", "skip"}, (again, exported)


# --- the general form: whatever plans cleanly applies cleanly ---------------------------

TABLES = ("a", "b", "c")
line_of_kind = {
    "table": st.builds(
        lambda ref, name, renamed, absent: {
            "kind": "table",
            "ref": ref,
            "spec": {"name": name},
            **({"renamed_from": renamed} if renamed and renamed != ref else {}),
            **({"state": "absent"} if absent else {}),
        },
        st.sampled_from(TABLES),
        st.sampled_from(["A", "B"]),
        st.sampled_from([None, None, *TABLES]),
        st.booleans(),
    ),
    "column": st.builds(
        lambda table, ref, target, renamed, absent, name, flags, kind: {
            "kind": "column",
            "table": table,
            "ref": ref,
            **({"state": "absent"} if absent else {}),
            **({"renamed_from": renamed} if renamed and renamed != ref else {}),
            **(
                {}
                if absent
                else {
                    "spec": {"name": name or ref.upper(), "type": kind, **flags}
                    if target is None
                    else {
                        "name": name or ref.upper(),
                        "type": "reference",
                        "options": {"target": target},
                        **flags,
                    }
                }
            ),
        },
        st.sampled_from(TABLES),
        st.sampled_from(["x", "y", "z"]),
        st.sampled_from([None, None, *TABLES]),
        st.sampled_from([None, None, "x", "y"]),
        st.booleans(),
        st.sampled_from([None, None, "X", "Y"]),  # names may clash or swap
        st.sampled_from([{}, {}, {"required": True}, {"unique": True}, {"default": "d"}]),
        st.sampled_from(["text", "text", "number"]),  # a retype the records must fit
    ),
    "rule": st.builds(
        lambda table, ref: {
            "kind": "rule",
            "table": table,
            "ref": ref,
            "spec": {"expression": "1"},
        },
        st.sampled_from(TABLES),
        st.sampled_from(["r", "x"]),
    ),
    "view": st.builds(
        lambda table, ref, columns: {
            "kind": "view",
            "table": table,
            "ref": ref,
            "spec": {"name": ref, "columns": columns},
        },
        st.sampled_from(TABLES),
        st.sampled_from(["v", "x"]),
        st.lists(st.sampled_from(["x", "y", "z", "col_1a2b3c"]), max_size=2, unique=True),
    ),
    "public_read": st.builds(
        lambda table, ref, view: {
            "kind": "public_read",
            "table": table,
            "ref": ref,
            **({"view": view} if view else {}),
        },
        st.sampled_from(TABLES),
        st.sampled_from(["p", "v"]),
        st.sampled_from([None, "v"]),
    ),
    "grant": st.builds(
        lambda table: {"kind": "grant", "table": table, "principal": "sales", "spec": {}},
        st.sampled_from(TABLES),
    ),
    "client_access": st.builds(
        lambda table: {"kind": "client_access", "table": table, "spec": {"enabled": True}},
        st.sampled_from(TABLES),
    ),
    "insight_selection": st.builds(
        lambda tables: {"kind": "insight_selection", "chatroom": CHATROOM, "tables": tables},
        st.lists(st.sampled_from(TABLES), min_size=1, max_size=3, unique=True),
    ),
    "record": st.builds(
        lambda table, value, reference: {
            "kind": "record",
            "table": table,
            "key": {"x": value},
            **({"values": {"y": {"x": reference}}} if reference else {}),
        },
        st.sampled_from(TABLES),
        st.sampled_from(["1", "2"]),
        st.sampled_from([None, "1", "2"]),  # a reference by the target record's key
    ),
}


def _identity(line: dict[str, Any]) -> tuple[Any, ...]:
    return (line["kind"], line.get("table"), line.get("ref"), line.get("principal"))


@st.composite
def document_pairs(draw: st.DrawFn) -> tuple[str, str]:
    """A document, and a second one that mostly keeps the first's lines (some dropped,
    some added): what a system's next apply looks like. Most tables are declared."""
    lines = st.lists(st.one_of(*line_of_kind.values()), max_size=8, unique_by=_identity)
    first = draw(lines)
    tables = [{"kind": "table", "ref": t, "spec": {"name": t.upper()}} for t in TABLES]
    first = [
        t
        for t in tables
        if draw(st.integers(0, 4)) and _identity(t) not in {_identity(line) for line in first}
    ] + first
    kept = [line for line in first if draw(st.integers(0, 5))]
    known = {_identity(line) for line in kept}
    second = kept + [line for line in draw(lines) if _identity(line) not in known]
    return document(header(), *first), document(header(), *second)


@given(pair=document_pairs(), deleted=st.lists(st.integers(0, 20), max_size=3))
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
async def test_random_documents_that_plan_cleanly_apply_cleanly(client, pair, deleted) -> None:
    """Two documents in a row, with live resources deleted through the API in between:
    each plan is refused with BAD_INPUT (a reason by line) or applies; never anything else."""
    slug = f"r{uuid.uuid4().hex[:12]}"
    await create_scope(client, slug)
    for step, text in enumerate(pair):
        planned = await plan(client, text, slug)
        if "hash" not in planned:
            assert planned["code"] == "BAD_INPUT", (planned, text)
            event(f"document {step + 1} refused")
            continue
        event(f"document {step + 1} applied")
        body = await post(client, APPLY, {"scope": slug, "document": text, "hash": planned["hash"]})
        assert "errors" not in body, (body["errors"], text)
        again = await plan(client, text, slug)
        assert {a["action"] for a in again["actions"]} <= {"noop", "skip"}, (again, text)
        if step == 0:  # then some of what it made goes away through the ordinary API
            rows = (await gql(client, STATE, {"scope": slug, "system": "crm"}))["iacState"]
            for index in deleted:
                if index < len(rows):
                    row = rows[index]
                    kind = "".join(p.title() for p in row["resourceType"].split("_"))
                    await post(
                        client,
                        f"mutation($id: ID!) {{ delete{kind}(id: $id) }}",
                        {"id": row["resourceId"]},
                    )


# --- 2. hand-over: an explicit release, then adoption -----------------------------------

RELEASE = """mutation($scope: String!, $system: String!, $refs: [String!]!) {
  release(scope: $scope, system: $system, refs: $refs) {
    stateName released version { serial resources { totalCount } }
  }
}"""


async def test_a_released_table_stays_live_unmanaged_and_another_system_adopts_it(http) -> None:
    crm = document(header(), table("people"), column("people", "email"), table("orders"))
    await plan_and_apply(http, crm)
    before = await state(http)
    billing = document(header("billing"), table("people", "People"), column("people", "email"))
    refused = await plan(http, billing)
    assert refused["code"] == "CONFLICT" and "release it there" in refused["messages"][0]

    variables = {"scope": SLUG, "system": "crm", "refs": ["people"]}
    released = (await gql(http, RELEASE, variables))["release"]
    assert released["stateName"] == "iac:crm/crm"
    assert released["released"] == ["people", "people.email"]
    assert released["version"] == {"serial": 2, "resources": {"totalCount": 1}}
    assert await state(http) == {"orders": before["orders"]}
    events = await gql(
        http, '{ state(name: "iac:crm/crm") { events { edges { node { action actor } } } } }'
    )
    actions_seen = [e["node"]["action"] for e in events["state"]["events"]["edges"]]
    assert "release" in actions_seen
    live = await gql(http, '{ scope(slug: "crm") { tables { id name tags settings } } }')
    people = next(t for t in live["scope"]["tables"] if t["id"] == before["people"])
    assert "system:crm" not in people["tags"] and "iac" not in people["settings"]

    adopted = await plan_and_apply(http, billing)
    assert set(actions(adopted).values()) == {"adopt"}
    assert await state(http, "billing") == {
        "people": before["people"],
        "people.email": before["people.email"],
    }
    # releasing what a system does not manage names it
    missing = await post(http, RELEASE, {**variables, "refs": ["people"]})
    assert missing["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    assert "manages no people" in missing["errors"][0]["message"]


# --- 5. intent vs drift on fields that hold secrets -------------------------------------


async def test_a_field_holding_a_secret_tells_intent_from_drift(http) -> None:
    def sync(url: str, password: str = "s3cr3t-pw") -> str:
        action = {"url": url, "password": password}
        spec = {"name": "Sync", "action": action}
        return document(header(), {"kind": "command", "ref": "sync", "spec": spec})

    await plan_and_apply(http, sync("https://a.test"))

    async def reason(text: str) -> str:
        [action] = (await plan(http, text))["actions"]
        return action["reason"]

    assert await reason(sync("https://b.test")) == "intent"  # only the url changed here
    assert await reason(sync("https://a.test", "new-pw")) == "intent"
    [command] = (await gql(http, '{ scope(slug: "crm") { commands { id } } }'))["scope"]["commands"]
    await gql(
        http,
        "mutation($id: ID!, $a: JSON!) { updateCommand(id: $id, input: {action: $a}) { id } }",
        {"id": command["id"], "a": {"url": "https://c.test", "password": "s3cr3t-pw"}},
    )
    assert await reason(sync("https://a.test")) == "drift"  # changed through the API
    assert await reason(sync("https://b.test")) == "both"
    await gql(
        http,
        "mutation($id: ID!, $a: JSON!) { updateCommand(id: $id, input: {action: $a}) { id } }",
        {"id": command["id"], "a": {"url": "https://a.test", "password": "rotated"}},
    )
    assert await reason(sync("https://a.test")) == "drift"  # the secret, through the API

    # never stored, never shown: not in the plan, the state view or the graph state
    planned = await plan(http, sync("https://a.test", "new-pw"))
    graph = await gql(
        http,
        '{ state(name: "iac:crm/crm") { versions(first: 5) { edges { node {'
        " resources { edges { node { attributes } } } } } } } }",
    )
    views = [planned, graph, await gql(http, STATE, {"scope": SLUG})]
    assert all("s3cr3t-pw" not in dumps(v).decode() for v in views)
    assert all("hmac-sha256" not in dumps(v).decode() for v in views)


async def test_column_names_stay_unique_per_table(http) -> None:
    lines = [header(), table("contacts"), column("contacts", "x", name="A")]
    await plan_and_apply(http, document(*lines, column("contacts", "y", name="B")))
    # two columns swap names in one apply, and a third takes a name another gives up
    swapped = [*lines[:2], column("contacts", "x", name="B"), column("contacts", "y", name="C")]
    text = document(*swapped, column("contacts", "z", name="A"))
    await plan_and_apply(http, text)
    await assert_converged(http, text)
    live = await gql(http, '{ scope(slug: "crm") { tables { columns { name } } } }')
    assert sorted(c["name"] for c in live["scope"]["tables"][0]["columns"]) == ["A", "B", "C"]
    # a name twice in one table is refused at plan, be it declared or not
    await gql(
        http,
        'mutation($t: ID!) { createColumn(table: $t, input: {name: "D", type: TEXT}) { id } }',
        {"t": (await state(http))["contacts"]},
    )
    for clash, holder in [("C", "that of contacts.y"), ("D", "an undeclared column's")]:
        refused = await plan(http, document(*swapped, column("contacts", "z", name=clash)))
        assert refused["messages"] == [f"column name {clash!r} is {holder} in this table"]
