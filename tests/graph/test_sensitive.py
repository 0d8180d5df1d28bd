"""Secrets taken out of a document and put back (app/graph/sensitive.py): pure."""

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from app.graph.sensitive import (
    Path,
    convention_paths,
    join,
    pack,
    split,
    unpack,
    withhold,
)
from tests.helpers.strategies import json_values, text

# paths into values like json_values': keys, and list indexes as strings
paths = st.lists(st.lists(st.one_of(text, st.integers(0, 3).map(str)), max_size=3), max_size=4)


@given(json_values, paths)
def test_split_then_join_gives_the_value_back(value: Any, raw_paths: list[list[str]]) -> None:
    chosen: list[Path] = [tuple(p) for p in raw_paths]
    masked, secrets = split(value, chosen)
    assert masked == withhold(value, chosen)  # what is stored is what readers see
    assert join(masked, unpack(pack(secrets))) == value


def test_split_takes_only_what_is_there() -> None:
    value = {"a": {"b": 1}, "l": [1, 2], "n": None}
    masked, secrets = split(value, [("a", "b"), ("a",), ("l", "1"), ("l", "5"), ("n",), ("x",)])
    assert masked == {"a": None, "l": [1, None], "n": None}
    assert [path for path, _ in secrets] == [("a", "b"), ("a",), ("l", "1")]
    assert join(masked, secrets) == value


def test_remote_state_credentials_are_secret_by_convention() -> None:
    config = {
        "address": "https://x",
        "password": "p",
        "assume_role": {"role_arn": "arn", "session_token": "t"},
        "access_key": "k",
        "key": "path/to/state",  # the s3 object key: not a credential
        "lists": [{"token": "t2"}],
    }
    found = convention_paths("data", "terraform_remote_state", {"config": config}, [])
    assert found == [
        ("config", "password"),
        ("config", "assume_role", "session_token"),
        ("config", "access_key"),
        ("config", "lists", "0", "token"),
    ]
    wrapped = {"config": {"value": {"token": "t"}, "type": ["object", {"token": "string"}]}}
    assert convention_paths("data", "terraform_remote_state", wrapped, []) == [("config", "token")]
    assert split(wrapped, [("config", "token")])[1] == [(("config", "value", "token"), "t")]
    assert convention_paths("managed", "terraform_remote_state", {"config": config}, []) == []
    assert convention_paths("data", "aws_instance", {"config": config}, []) == []


def test_paths_reach_through_dynamic_values() -> None:
    # terraform_data as Terraform 1.15 writes it: `input` marked, `output` its copy
    dynamic = {"value": {"engine": "pg", "password": "p"}, "type": ["object", {}]}
    attributes = {"input": dynamic, "output": dynamic, "record": {"type": "A", "value": "v"}}
    marked = [("input", "password")]
    paths = marked + convention_paths("managed", "terraform_data", attributes, marked)
    assert paths == [("input", "password"), ("output", "password")]
    masked, secrets = split(attributes, paths)
    assert [path for path, _ in secrets] == [
        ("input", "value", "password"),
        ("output", "value", "password"),
    ]
    assert masked["input"]["value"] == {"engine": "pg", "password": None}
    assert masked["output"] == masked["input"]
    assert withhold(attributes, paths) == masked
    assert join(masked, secrets) == attributes
    # an object that merely has `type` and `value` attributes is reached as it is
    assert split(attributes, [("record", "value")])[1] == [(("record", "value"), "v")]
