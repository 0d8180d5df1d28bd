"""app/access.py: roles, what a token touches, and may_read (Python) agreeing with the
SQL function may_read of migration 0013."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.access import ANONYMOUS, UNVERIFIED, Principal, Role, checked_globs, checked_scopes
from app.errors import BadInput, Forbidden

CI = Principal("ci", Role.WRITE, ("team/prod/*", "shared?"), ("crm",))


def test_globs_cross_slashes_and_question_marks_take_one_character() -> None:
    assert CI.may_read("team/prod/net") and CI.may_read("team/prod/a/b")
    assert CI.may_read("shared1") and not CI.may_read("shared12")
    assert not CI.may_read("team/dev/net") and not CI.may_read("xteam/prod/net")


def test_scopes_are_the_only_way_to_iac_states() -> None:
    assert CI.may_read("iac:crm/sales") and not CI.may_read("iac:hr/sales")
    star = Principal("star", Role.READ, ("*",))
    assert star.may_read("anything/at/all") and not star.may_read("iac:crm/sales")
    assert not star.may_touch_scope("crm")
    scoped = Principal("iac", Role.WRITE, (), ("crm",))
    assert not scoped.may_read("team/prod/net") and scoped.may_touch_scope("crm")


def test_neither_globs_nor_scopes_is_everything() -> None:
    for who in (ANONYMOUS, Principal("all", Role.READ)):
        assert who.patterns is None and who.everywhere
        assert who.may_read("iac:x/y") and who.may_read("a") and who.may_touch_scope("z")


def test_an_unverified_websocket_touches_nothing() -> None:
    """Before its connection_init shows a token: no state, no scope, no role."""
    assert UNVERIFIED.patterns == [] and not UNVERIFIED.everywhere
    assert not UNVERIFIED.may_read("a") and not UNVERIFIED.may_read("iac:x/y")
    assert not UNVERIFIED.may_touch_scope("z") and not UNVERIFIED.has(Role.READ)
    with pytest.raises(Forbidden):
        UNVERIFIED.require(Role.READ, "read")


def test_refusals_say_who_what_and_why() -> None:
    with pytest.raises(Forbidden) as refused:
        CI.require_state(Role.WRITE, "team/dev/net", "POST state 'team/dev/net'")
    assert refused.value.status == 403
    assert "outside its states (team/prod/*, shared?, iac:crm/*)" in refused.value.message
    assert refused.value.detail == {"token": "ci", "role": "write", "state": "team/dev/net"}
    with pytest.raises(Forbidden, match="needs the admin role"):
        CI.require(Role.ADMIN, "call prune")
    with pytest.raises(Forbidden, match="scope 'hr' is outside its scopes"):
        CI.require_scope(Role.WRITE, "hr", "call apply")
    CI.require_state(Role.READ, "team/prod/x", "read")  # no refusal


def test_the_plan_role_sits_between_read_and_write() -> None:
    """plan: read's GraphQL plus the raw state of its states; never a write."""
    pr = Principal("pr", Role.PLAN, ("team/*",))
    assert [r.value for r in Role] == ["read", "plan", "write", "admin"]
    assert pr.has(Role.READ) and pr.has(Role.PLAN) and not pr.has(Role.WRITE)
    assert pr.may_plan("team/app") and not pr.may_plan("other/app")
    assert not Principal("dash", Role.READ).may_plan("team/app")
    with pytest.raises(Forbidden, match=r"token 'pr' \(plan\) may not POST .*needs the write"):
        pr.require_state(Role.WRITE, "team/app", "POST state 'team/app'")


def test_token_reach_is_checked() -> None:
    with pytest.raises(BadInput, match="by their scope"):
        checked_globs(["iac:crm/*"])
    with pytest.raises(BadInput, match="not a scope slug"):
        checked_scopes(["CRM prod"])


NAMES = st.text(alphabet="ab/_%*?.:ic\\", max_size=8)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    globs=st.lists(NAMES.filter(lambda g: g and not g.startswith("iac:")), max_size=3),
    scopes=st.lists(st.sampled_from(["a", "b_c", "ic"]), max_size=2),
    names=st.lists(st.one_of(NAMES, NAMES.map(lambda n: f"iac:{n}")), min_size=1, max_size=6),
)
async def test_python_and_sql_agree(pool, globs, scopes, names) -> None:
    who = Principal("p", Role.READ, tuple(globs), tuple(scopes))
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT n, may_read(n, $2::text[]) AS ok FROM unnest($1::text[]) AS n",
            names,
            who.patterns,
        )
    assert {r["n"]: r["ok"] for r in rows} == {n: who.may_read(n) for n in names}
