"""Reading trusted issuers and their rules (app.oidc.config): pure."""

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.access import Role
from app.errors import BadInput
from app.oidc.config import parse

BASE = """
issuers:
  - name: github
    issuer: https://token.actions.githubusercontent.com
    audience: https://infragraph.example.com
    rules:
      - match: {repository_id: "892345671", ref: refs/heads/main}
        role: write
        states: ["prod/*"]
      - match: {repository_id: "892345671", ref: ["refs/heads/release-*", "refs/tags/v*"]}
        role: plan
        states: ["prod/*"]
        scopes: [network]
      - match: {repository_id: "892345671"}
        role: read
        states: ["prod/*"]
"""


def test_yaml_and_its_first_matching_rule() -> None:
    [issuer] = parse(BASE)
    assert issuer.algorithms == ("RS256",)
    assert issuer.max_ttl_s == 7200
    main = {"repository_id": "892345671", "ref": "refs/heads/main"}
    release = {"repository_id": "892345671", "ref": "refs/heads/release-2"}
    feature = {"repository_id": "892345671", "ref": "refs/heads/feature"}
    other = {"repository_id": "11", "ref": "refs/heads/main"}
    assert issuer.first_rule(main).role is Role.WRITE  # type: ignore[union-attr]
    rule = issuer.first_rule(release)
    assert rule is not None and rule.role is Role.PLAN and rule.scopes == ("network",)
    assert issuer.first_rule(feature).role is Role.READ  # type: ignore[union-attr]
    assert issuer.first_rule(other) is None
    assert issuer.first_rule({"ref": "refs/heads/main"}) is None  # an absent claim


def test_json_is_read_too() -> None:
    [issuer] = parse(
        '{"issuers": [{"issuer": "https://gitlab.com", "audience": "a", "algorithms": ["ES256"],'
        ' "rules": [{"match": {"project_id": 41672}, "role": "write", "states": ["x/*"]}]}]}'
    )
    assert issuer.name == "https://gitlab.com"
    assert issuer.first_rule({"project_id": "41672"}) is not None  # numbers as their text


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (("    audience: https://infragraph.example.com\n", ""), "audience"),
        (("    rules:", "    algorithms: [HS256]\n    rules:"), "asymmetric"),
        (("    rules:", "    algorithms: [none]\n    rules:"), "asymmetric"),
        (("role: write", "role: owner"), "role is one of"),
        (('role: write\n        states: ["prod/*"]', "role: write"), "give `states`"),
    ],
)
def test_refused_configs_say_why(change: tuple[str, str], reason: str) -> None:
    assert change[0] in BASE
    with pytest.raises(BadInput, match=reason):
        parse(BASE.replace(*change, 1))


_TEXT = st.text(string.ascii_lowercase + "/-", min_size=1, max_size=8)


@given(st.lists(_TEXT, min_size=1, max_size=5), _TEXT)
def test_the_first_rule_that_matches_wins(refs: list[str], ref: str) -> None:
    rules = "".join(
        f'      - match: {{ref: "{r}"}}\n        role: read\n        states: ["s{i}/*"]\n'
        for i, r in enumerate(refs)
    )
    [issuer] = parse(BASE.split("    rules:")[0] + "    rules:\n" + rules)
    found = issuer.first_rule({"ref": ref})
    expected = next((i for i, r in enumerate(refs) if r == ref), None)
    assert (found is None) == (expected is None)
    if found is not None:
        assert found.states == (f"s{expected}/*",)
