"""The planner alone (pure): hand-built state and live snapshots, and hypothesis."""

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.iac import plan as planner
from app.iac.document import parse_document
from app.iac.plan import ACTIONS, Plan, PlanError
from app.iac.state import StateRow, seal_secrets
from app.jsonutil import dumps

SCOPE = str(uuid.UUID(int=1))
KEY = b"k" * 32


def make_plan(*args: Any, **kwargs: Any) -> Plan:
    return planner.make_plan(*args, secret_key=KEY, **kwargs)


HEADER = {"kind": "header", "system": "crm", "version": 1}


def _doc(*lines: dict[str, Any]) -> Any:
    return parse_document(b"\n".join(dumps(line) for line in (HEADER, *lines)))


def _table(n: int, name: str, **fields: Any) -> dict[str, Any]:
    tid = str(uuid.UUID(int=1000 + n))
    base = {"description": None, "settings": {"column_mapping": {}}, "tags": []}
    return {"kind": "table", "id": tid, "scope_id": SCOPE, "table_id": tid, "name": name} | (
        base | fields
    )


def _column(table: dict[str, Any], key: str, name: str, **fields: Any) -> dict[str, Any]:
    base = {"type": "text", "required": False, "unique": False, "default": None, "options": {}}
    column_id = f"{table['id']}:{key}"
    head = {"kind": "column", "id": column_id, "table_id": table["id"], "key": key, "name": name}
    return head | base | fields


def _row(kind: str, ref: str, live: dict[str, Any], spec: dict[str, Any], system: str = "crm"):
    return StateRow(system, kind, ref, live["id"], live["table_id"], spec)


CONTACTS = _table(1, "Contacts")
EMAIL = _column(CONTACTS, "col_000001", "Email")
TABLE_LINE = {"kind": "table", "ref": "contacts", "spec": {"name": "Contacts"}}
EMAIL_LINE = {
    "kind": "column",
    "table": "contacts",
    "ref": "email",
    "spec": {"name": "Email", "type": "text"},
}
ROWS = [
    _row("table", "contacts", CONTACTS, {"name": "Contacts"}),
    _row("column", "contacts.email", EMAIL, {"name": "Email", "type": "text"}),
]


def test_in_sync_is_all_noop_and_the_hash_is_stable() -> None:
    plan = make_plan(_doc(TABLE_LINE, EMAIL_LINE), ROWS, [CONTACTS, EMAIL])
    assert [(a.action, a.ref) for a in plan.actions] == [
        ("noop", "contacts"),
        ("noop", "contacts.email"),
    ]
    again = make_plan(_doc(TABLE_LINE, EMAIL_LINE), ROWS, [CONTACTS, EMAIL])
    assert again.hash == plan.hash


def test_the_hash_changes_with_live_values_state_and_document() -> None:
    base = make_plan(_doc(TABLE_LINE, EMAIL_LINE), ROWS, [CONTACTS, EMAIL]).hash
    drifted = {**EMAIL, "required": True}  # an unmanaged field: no action, but read
    assert make_plan(_doc(TABLE_LINE, EMAIL_LINE), ROWS, [CONTACTS, drifted]).hash != base
    other_state = [ROWS[0], _row("column", "contacts.email", EMAIL, {"name": "Email"})]
    assert make_plan(_doc(TABLE_LINE, EMAIL_LINE), other_state, [CONTACTS, EMAIL]).hash != base
    assert make_plan(_doc(TABLE_LINE), ROWS, [CONTACTS, EMAIL]).hash != base


def test_secrets_are_compared_against_live_but_never_shown() -> None:
    secret = {"kind": "table", "ref": "contacts", "spec": {"settings": {"api_secret": "s2"}}}
    live = {**CONTACTS, "settings": {"api_secret": "s1"}}
    plan = make_plan(_doc(secret), ROWS[:1], [live])
    [action] = plan.actions
    [change] = action.changes
    assert action.action == "update" and change.desired == {"api_secret": "(secret)"}
    assert "s1" not in repr(plan.actions) and "s2" not in repr(plan.actions)


@given(
    last=st.sampled_from(["s3cr3t-p", "s3cr3t-q"]),
    desired=st.sampled_from(["s3cr3t-p", "s3cr3t-q"]),
    live=st.sampled_from(["s3cr3t-p", "s3cr3t-q", "s3cr3t-r"]),
    urls=st.tuples(*[st.sampled_from(["a", "b"])] * 3),
)
def test_intent_and_drift_on_a_field_holding_a_secret_as_if_state_kept_it(
    last, desired, live, urls
) -> None:
    """State keeps a keyed hash of the secret, never the secret; the reason of a change
    is what it would be were the whole value remembered."""

    def hook(password: str, url: str) -> dict[str, Any]:
        return {"hook": {"url": url, "password": password}}

    remembered = seal_secrets({"settings": hook(last, urls[0])}, KEY)
    assert last not in repr(remembered)
    line = {"kind": "table", "ref": "contacts", "spec": {"settings": hook(desired, urls[1])}}
    rows = [_row("table", "contacts", CONTACTS, remembered)]
    current = {**CONTACTS, "settings": hook(live, urls[2])}
    [action] = make_plan(_doc(line), rows, [current]).actions
    values = [hook(last, urls[0]), hook(desired, urls[1]), hook(live, urls[2])]
    if values[1] == values[2]:
        assert action.changes == ()
        return
    [change] = action.changes
    intent, drift = values[1] != values[0], values[2] != values[0]
    assert change.reason == ("both" if intent and drift else "drift" if drift else "intent")
    assert change.last_applied == {"hook": {"url": urls[0], "password": "(secret)"}}


def test_a_sub_resource_of_an_unknown_table_is_refused() -> None:
    with pytest.raises(PlanError, match=r"table contacts is neither declared"):
        make_plan(_doc(EMAIL_LINE), [], [])


def test_a_reference_target_must_be_declared_or_managed() -> None:
    ref = {
        "kind": "column",
        "table": "contacts",
        "ref": "boss",
        "spec": {"name": "Boss", "type": "reference", "options": {"target": "people"}},
    }
    with pytest.raises(PlanError, match=r"table people is neither declared"):
        make_plan(_doc(TABLE_LINE, ref), ROWS, [CONTACTS, EMAIL])


def test_a_ref_cannot_change_kind() -> None:
    rule = StateRow("crm", "rule", "contacts.email", str(uuid.uuid4()), CONTACTS["id"], {})
    with pytest.raises(PlanError, match=r"bound to a rule in state"):
        make_plan(_doc(TABLE_LINE, EMAIL_LINE), [ROWS[0], rule], [CONTACTS, EMAIL])


def test_an_unmanaged_column_with_the_same_name_is_adopted() -> None:
    plan = make_plan(_doc(TABLE_LINE, EMAIL_LINE), ROWS[:1], [CONTACTS, EMAIL])
    assert [a.action for a in plan.actions] == ["noop", "adopt"]


def test_creating_needs_the_required_fields() -> None:
    bare = {"kind": "column", "table": "contacts", "ref": "x", "spec": {"name": "X"}}
    with pytest.raises(PlanError, match=r"creating it needs spec.type"):
        make_plan(_doc(TABLE_LINE, bare), ROWS[:1], [CONTACTS])


# --- hypothesis: a random world of applied, drifted, deleted and declared columns -----

NAMES = st.sampled_from(["A", "B", "C"])
TYPES = st.sampled_from(["text", "number", "boolean"])


@st.composite
def worlds(draw: st.DrawFn) -> tuple[Any, list[StateRow], list[dict[str, Any]]]:
    """Columns of one table, each in some mix of: declared (with a random subset of its
    fields), in state (last applied), live (maybe drifted)."""
    lines = [TABLE_LINE]
    rows = [ROWS[0]]
    live: list[dict[str, Any]] = [CONTACTS]
    for n in range(draw(st.integers(0, 6))):
        ref, key = f"c{n}", f"col_{n:06d}"
        name, type_ = draw(NAMES) + str(n), draw(TYPES)
        declared, in_state, is_live = draw(st.tuples(st.booleans(), st.booleans(), st.booleans()))
        if declared:
            spec = {"name": name, "type": type_}
            spec = {k: v for k, v in spec.items() if draw(st.booleans()) or k == "name"}
            if not in_state and not is_live:
                spec["type"] = type_  # a create needs it
            lines.append({"kind": "column", "table": "contacts", "ref": ref, "spec": spec})
        column = _column(CONTACTS, key, draw(NAMES) + str(n) if draw(st.booleans()) else name)
        column["type"] = draw(TYPES)
        if in_state:
            rows.append(_row("column", f"contacts.{ref}", column, {"name": name, "type": type_}))
        if is_live:
            live.append(column)
    return _doc(*lines), rows, live


@settings(max_examples=200, deadline=None)
@given(worlds())
def test_random_worlds_plan_deterministically_and_touch_only_what_they_should(world) -> None:
    doc, rows, live = world
    try:
        plan = make_plan(doc, rows, live)
    except PlanError as exc:
        assert all(e.line > 0 and e.message for e in exc.errors)
        return
    assert make_plan(doc, rows, live).hash == plan.hash
    assert sum(plan.summary.values()) == len(plan.actions)
    assert set(plan.summary) == set(ACTIONS)
    declared = {line.qualified_ref for line in doc.lines}
    live_ids = {r["id"] for r in live}
    for action in plan.actions:
        if action.ref not in declared:  # undeclared: only an orphan cleanup, never a change
            assert action.action == "orphaned"
    for line in doc.lines:
        mine = [a.action for a in plan.actions if a.ref == line.qualified_ref]
        assert len([a for a in mine if a != "orphaned"]) == 1, mine
    for row in rows:
        orphaned = any(a.action == "orphaned" and a.ref == row.ref for a in plan.actions)
        assert orphaned == (row.resource_id not in live_ids)
    # once live equals the declaration and state remembers it, everything is noop
    for action in plan.actions:
        for change in action.changes:
            assert change.reason in ("intent", "drift", "both", "create")
