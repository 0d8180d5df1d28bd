"""app/readers.py: globs that overlap, how a GET of a state is answered to each token, and
what `whoami --state` says a token may do (pure)."""

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app import globs
from app.access import ANONYMOUS, UNVERIFIED, Principal, Role
from app.errors import BadInput
from app.readers import (
    OutputReaders,
    Read,
    abilities,
    checked_readers,
    globs_overlap,
    is_named_reader,
    state_read,
)

GLOBS = st.text(alphabet="ab/*?", max_size=4)
WITNESS_ALPHABET = "ab/c"  # c: a character neither glob names


def _some_name_matches_both(a: str, b: str) -> bool:
    """By brute force: a witness is at most as long as the globs' literals and `?`s."""
    ra, rb = globs.regex(a), globs.regex(b)
    longest = len(a) + len(b)
    for length in range(longest + 1):
        for chars in itertools.product(WITNESS_ALPHABET, repeat=length):
            name = "".join(chars)
            if ra.fullmatch(name) and rb.fullmatch(name):
                return True
    return False


@settings(max_examples=300, deadline=None)
@given(a=GLOBS, b=GLOBS)
def test_globs_overlap_when_some_name_matches_both(a: str, b: str) -> None:
    assert globs_overlap(a, b) == _some_name_matches_both(a, b) == globs_overlap(b, a)


def test_overlapping_globs_by_example() -> None:
    assert globs_overlap("apps/*", "apps/web") and globs_overlap("apps/*", "*/web")
    assert globs_overlap("a?c", "*c") and not globs_overlap("apps/*", "plat/*")
    assert not globs_overlap("a?", "a") and globs_overlap("*", "")


NET = "net/core"
READERS = OutputReaders(tokens=("auditor",), states=("plat/*",))


def who(name: str, role: Role, *globs: str) -> Principal:
    return Principal(name, role, tuple(globs))


@pytest.mark.parametrize(
    ("caller", "read"),
    [
        (who("net-ci", Role.WRITE, "net/*"), Read.WHOLE),
        (who("net-pr", Role.PLAN, "net/*"), Read.WHOLE),
        (ANONYMOUS, Read.WHOLE),
        (who("net-dash", Role.READ, "net/*"), Read.PUBLIC_OUTPUTS),
        (who("plat-ci", Role.WRITE, "plat/*"), Read.OUTPUTS),  # a consumer state's writer
        (who("plat-pr", Role.PLAN, "plat/cluster"), Read.OUTPUTS),  # and planner
        (who("plat-dash", Role.READ, "plat/*"), Read.NONE),  # reading is not acting for it
        (who("auditor", Role.READ, "audit/*"), Read.OUTPUTS),  # named
        (who("apps-ci", Role.WRITE, "apps/*"), Read.NONE),
        (who("iac-only", Role.WRITE), Read.WHOLE),
        (Principal("scoped", Role.WRITE, (), ("crm",)), Read.NONE),  # IaC scopes only
        (UNVERIFIED, Read.NONE),
    ],
)
def test_how_a_get_is_answered(caller: Principal, read: Read) -> None:
    assert state_read(caller, NET, READERS) is read


def test_a_glob_reaches_no_iac_state_and_no_reader_is_named_by_default() -> None:
    writer = Principal("w", Role.WRITE, (), ("plat",))  # writes iac:plat/* only
    assert not is_named_reader(writer, OutputReaders(states=("iac:plat/*",)))
    assert state_read(who("p", Role.WRITE, "plat/*"), NET, OutputReaders()) is Read.NONE


def test_whoami_abilities() -> None:
    pr = abilities(who("web-pr", Role.PLAN, "apps/*"), "apps/web", OutputReaders())
    assert pr.names() == ["read", "outputs", "sensitive_outputs", "raw_state", "plan_lock"]
    dash = abilities(who("dash", Role.READ, "*"), "apps/web", OutputReaders())
    assert dash.names() == ["read", "outputs"]
    consumer = abilities(who("web-ci", Role.WRITE, "apps/*"), NET, OutputReaders(("web-ci",)))
    assert consumer.names() == ["outputs", "sensitive_outputs"]
    owner = abilities(who("net-ci", Role.WRITE, "net/*"), NET, READERS)
    assert "write" in owner.names() and "force_unlock" not in owner.names()
    assert abilities(ANONYMOUS, NET, READERS).force_unlock


def test_readers_are_checked() -> None:
    assert checked_readers(["a", "a", "b"], ["x/*"]) == OutputReaders(("a", "b"), ("x/*",))
    with pytest.raises(BadInput, match="by their scope"):
        checked_readers([], ["iac:crm/*"])
    with pytest.raises(BadInput, match=re.escape("empty")):
        checked_readers([""], [])
