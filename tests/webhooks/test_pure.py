"""The pure parts: kinds and actions, signatures, masking, retry delays, addresses."""

import ipaddress
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app import jsonutil
from app.secretnames import MASK, masked
from app.webhooks.destination import UnsafeDestination, parse_url, refusal
from app.webhooks.kinds import ACTIONS, EventKind, actions_of, kind_of
from app.webhooks.payload import MAX_BODY_BYTES, render, slack_text
from app.webhooks.settings import WebhookSettings
from app.webhooks.signing import signature, verify
from app.webhooks.worker import retry_delay

STRICT = WebhookSettings()
OPEN = WebhookSettings(allow_http=True, allow_private=True)


@given(st.sets(st.sampled_from(EventKind)))
def test_the_actions_of_kinds_are_those_kinds(kinds: set[EventKind]) -> None:
    actions = actions_of(kinds)
    assert actions == sorted(set(actions))
    assert {kind_of(a) for a in actions} == kinds


def test_each_action_is_one_kind() -> None:
    every = [a for actions in ACTIONS.values() for a in actions]
    assert len(every) == len(set(every))
    assert set(ACTIONS) == set(EventKind)
    assert kind_of("export") is None  # not every event is a kind


@given(st.binary(min_size=1), st.binary(), st.binary())
def test_a_signature_verifies_only_with_its_secret_and_body(
    secret: bytes, body: bytes, other: bytes
) -> None:
    header = signature(secret, body)
    assert header.startswith("sha256=") and len(header) == 7 + 64
    assert verify(secret, body, header)
    assert verify(secret, other, header) == (other == body)
    assert not verify(secret + b"x", body, header)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "password", "db_password", "n", "token"]), inner)
    ),
    max_leaves=12,
)


def _leaves_under_credentials(value: object, under: bool = False) -> list[object]:
    if isinstance(value, dict):
        return [
            leaf
            for k, v in value.items()
            for leaf in _leaves_under_credentials(
                v, under or k in ("password", "db_password", "token")
            )
        ]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves_under_credentials(v, under)]
    return [value] if under else []


@given(JSON)
def test_masking_leaves_no_credential(value: object) -> None:
    shown = masked(value)
    # a null credential stays null (nothing to hide); any other value is MASK
    assert all(leaf in (MASK, None) for leaf in _leaves_under_credentials(shown))
    assert _leaves_under_credentials(shown).count(None) == _null_credentials(value)
    if not _leaves_under_credentials(value) and not _has_credential_key(value):
        assert shown == value


def _null_credentials(value: object) -> int:
    if isinstance(value, dict):
        return sum(
            (v is None) if k in ("password", "db_password", "token") else _null_credentials(v)
            for k, v in value.items()
        )
    if isinstance(value, list):
        return sum(_null_credentials(v) for v in value)
    return 0


def _has_credential_key(value: object) -> bool:
    if isinstance(value, dict):
        return any(k in ("password", "db_password", "token") for k in value) or any(
            _has_credential_key(v) for v in value.values()
        )
    return isinstance(value, list) and any(_has_credential_key(v) for v in value)


def _document(data: object) -> dict[str, object]:
    return {
        "delivery": "d",
        "id": "e",
        "kind": "policy.violated",
        "action": "policy-violated",
        "time": "t",
        "state": "team/net",
        "serial": 3,
        "actor": "alice",
        "url": "https://ig.example/ui/state?name=team/net",
        "data": data,
        "sent_at": 1,
    }


def test_the_body_is_bounded_and_slack_gets_text() -> None:
    big = render(_document({"addresses": ["x" * 1000] * 100}), "json")
    assert len(big) < MAX_BODY_BYTES and jsonutil.loads(big)["data"] == {"truncated": True}
    text = slack_text(_document({"policy": "p", "severity": "high", "count": 2}))
    assert text == (
        "infragraph policy.violated: team/net #3 by alice: policy p (high) at 2 "
        "<https://ig.example/ui/state?name=team/net|open>"
    )
    assert jsonutil.loads(render(_document({}), "slack")) == {"text": slack_text(_document({}))}


@given(st.integers(min_value=1, max_value=200), st.integers())
def test_retry_delays_double_to_the_cap_with_jitter(attempts: int, seed: int) -> None:
    settings = WebhookSettings(retry_min_s=10, retry_max_s=3600)
    delay = retry_delay(attempts, settings, random.Random(seed))
    base = min(3600, 10 * 2 ** (attempts - 1))
    assert base / 2 <= delay <= base


@given(st.ip_addresses())
def test_only_public_addresses_pass(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
    plain = address.ipv4_mapped if address.version == 6 and address.ipv4_mapped else address
    assert (refusal(address, STRICT) is None) == (plain.is_global and not plain.is_multicast)
    assert refusal(address, OPEN) is None


def test_urls() -> None:
    target = parse_url("https://Hooks.Example:8443/a/b?x=1#frag", STRICT)
    assert (target.host, target.port, target.path) == ("hooks.example", 8443, "/a/b?x=1")
    for bad in ("http://hooks.example/", "ftp://x/", "https:///x", "https://u:p@x/", "x"):
        with pytest.raises(UnsafeDestination):
            parse_url(bad, STRICT)
    assert parse_url("http://hooks.example", OPEN).path == "/"
