"""One glob dialect (app/globs.py) for prune, tokens and policies: all three select the
same names for every glob, policies and tokens as PostgreSQL evaluates them."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app import db, globs
from app.access import Principal, Role
from app.graph.retention import glob_matches

# Characters special to some glob or LIKE dialect, a separator, and plain ones.
_ALPHABET = st.sampled_from([*"ab/*?[]!^-%_\\.", "é", "\n"])
names = st.text(_ALPHABET, max_size=8)
patterns = st.text(_ALPHABET, min_size=1, max_size=6)


def reference(glob: str, name: str) -> bool:
    """The dialect, spelt out: `*` any run, `?` one character, anything else itself."""
    if not glob:
        return not name
    head, rest = glob[0], glob[1:]
    if head == "*":
        return any(reference(rest, name[i:]) for i in range(len(name) + 1))
    return bool(name) and (head == "?" or head == name[0]) and reference(rest, name[1:])


@given(glob=patterns, name=names)
def test_the_matcher_is_the_dialect(glob: str, name: str) -> None:
    assert globs.matches(glob, name) == reference(glob, name)


def test_the_dialect_by_example() -> None:
    assert globs.matches("team/*", "team/prod/network")
    assert globs.matches("a?c", "abc") and not globs.matches("a?c", "ac")
    assert globs.matches("a[b]", "a[b]") and not globs.matches("a[b]", "ab")
    assert not globs.matches("Team/*", "team/x")
    assert globs.like_pattern("a_b%c\\*?") == "a\\_b\\%c\\\\%_"


@given(pattern=patterns, candidates=st.lists(names, min_size=1, max_size=6, unique=True))
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
async def test_prune_tokens_and_policies_agree(
    pool: db.Pool, pattern: str, candidates: list[str]
) -> None:
    by_prune = set(glob_matches(candidates, pattern))
    token = Principal("t", Role.READ, (pattern,))
    by_token = {name for name in candidates if token.may_read(name)}
    async with pool.acquire() as conn:
        transaction = conn.transaction()
        await transaction.start()
        try:
            like = await conn.fetchval("SELECT glob_like($1)", pattern)
            # a policy covering states, types and providers by this glob, as it is stored
            await conn.execute(
                """INSERT INTO policies (name, severity, resource_type, states, provider,
                                         condition, created_by)
                   VALUES ('glob', 'info', $1, $1, $1, '$.a == 1', 't')""",
                pattern,
            )
            rows = await conn.fetch(
                """SELECT n, n LIKE p.states_like AS state, n LIKE p.type_like AS type,
                          n LIKE p.provider_like AS provider, may_read(n, ARRAY[$2]) AS token
                   FROM unnest($1::text[]) AS n, policies p WHERE p.name = 'glob'""",
                candidates,
                pattern,
            )
        finally:
            await transaction.rollback()
    assert like == globs.like_pattern(pattern)
    for column in ("state", "type", "provider", "token"):
        assert {r["n"] for r in rows if r[column]} == by_prune, column
    assert by_token == by_prune == {n for n in candidates if globs.matches(pattern, n)}
