"""Reading a plan's JSON (pure): actions, changed paths, masking, refusals; fuzzed."""

import contextlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.errors import BadInput
from app.plans.parse import MASK, UNKNOWN, Action, changed_paths, parse_plan
from tests.helpers.plans import change, plan

json_leaf = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)


@pytest.mark.parametrize(
    ("actions", "action"),
    [
        (["create"], Action.CREATE),
        (["update"], Action.UPDATE),
        (["delete"], Action.DELETE),
        (["delete", "create"], Action.REPLACE),
        (["create", "delete"], Action.REPLACE),
        (["read"], Action.READ),
        (["no-op"], Action.NO_OP),
        (["forget"], Action.FORGET),
    ],
)
def test_actions(actions: list[str], action: Action) -> None:
    parsed = parse_plan(plan([change("aws_s3_bucket.b", actions, {}, {})]))
    assert parsed.changes[0].action is action
    assert parsed.summary() == {action.name: 1}


def test_moves_imports_sensitive_and_unknown() -> None:
    imported = change("aws_s3_bucket.b", ["no-op"], {}, {})
    imported["change"]["importing"] = {"id": "b"}
    parsed = parse_plan(
        plan(
            [
                change(
                    "aws_db_instance.db",
                    ["update"],
                    {"password": "old-secret", "size": 1, "arn": "a"},
                    {"password": "new-secret", "size": 2, "arn": None},
                    unknown={"arn": True},
                    before_sensitive={"password": True},
                    after_sensitive={"password": True},
                    previous_address="aws_db_instance.old",
                ),
                imported,
            ]
        )
    )
    db = parsed.changes[0]
    assert db.moved and not db.importing
    paths = {a.path: (a.before, a.after, a.sensitive) for a in db.attributes}
    assert paths == {
        "arn": ("a", UNKNOWN, False),
        "password": (MASK, MASK, True),
        "size": (1, 2, False),
    }
    assert "new-secret" not in repr(db)
    assert parsed.changes[1].importing
    assert parsed.summary() == {"UPDATE": 1, "MOVE": 1, "NO_OP": 1, "IMPORT": 1}


@pytest.mark.parametrize(
    "document",
    [
        [],
        {"format_version": 1},
        {"format_version": "2.0", "resource_changes": []},
        {"format_version": "1.2"},
        {"format_version": "1.2", "resource_changes": {}},
        {"format_version": "1.2", "resource_changes": [{"address": "a"}]},
        {
            "format_version": "1.2",
            "resource_changes": [{"address": "a", "change": {"actions": ["x"]}}],
        },
    ],
)
def test_refused(document: Any) -> None:
    with pytest.raises(BadInput):
        parse_plan(document)


@given(json_value, json_value)
def test_changed_paths_are_exactly_the_differences(before: Any, after: Any) -> None:
    found = list(changed_paths(before, after, None, None, None))
    assert (found == []) == (before == after)
    assert len({a.path for a in found}) == len(found)
    # a value that differs, or a list item or key only on one side (shown as null)
    assert all(a.before != a.after or a.before is None for a in found)


@given(json_value, json_value, json_value)
def test_sensitive_values_never_show(before: Any, after: Any, secret: Any) -> None:
    marker = "s3cr3t-marker"
    doc = plan(
        [
            change(
                "aws_x.y",
                ["update"],
                {"a": before, "s": marker},
                {"a": after, "s": [marker, secret]},
                before_sensitive={"s": True},
                after_sensitive={"s": True},
            )
        ]
    )
    parsed = parse_plan(doc)
    assert marker not in repr(parsed)


@given(st.dictionaries(st.text(max_size=6), json_value, max_size=6))
def test_any_document_is_read_or_refused(document: dict[str, Any]) -> None:
    for doc in (document, {**document, "format_version": "1.1"}):
        with contextlib.suppress(BadInput):
            parse_plan(doc)
