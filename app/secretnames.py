"""Which keys of a JSON document hold secrets by their name: one rule for a Terraform
remote-state backend `config`, the catalog's objects (a trigger's or command's `action`,
a table's `settings`, a column's `options`) and what IaC state remembers (pure).

A key is secret when it is `secret`, `password`, `token`, `credentials` (and a few
backend spellings: `conn_str`, `http_auth`), or ends in `_secret`, `_password`,
`_token`, `_key` or `_credentials`. The whole value under such a key is the secret.
"""

from collections.abc import Iterator
from typing import Any

_NAMES = frozenset({"secret", "password", "token", "credentials", "conn_str", "http_auth"})
_SUFFIXES = ("_secret", "_password", "_token", "_key", "_credentials")

# What a reader sees in place of a secret value (and what, written back, keeps it).
MASK = "(secret)"

Path = tuple[str, ...]


def is_secret_name(key: str) -> bool:
    return key in _NAMES or key.endswith(_SUFFIXES)


def secret_paths(value: Any, path: Path = ()) -> Iterator[Path]:
    """The JSON paths (keys, list indexes as strings) of the values under secret keys, at
    any depth; nothing below one is looked at (the whole value is the secret)."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if is_secret_name(key):
                yield (*path, key)
            else:
                yield from secret_paths(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from secret_paths(inner, (*path, str(index)))


def masked(value: Any) -> Any:
    """`value` with every value under a secret key (not null) replaced by MASK."""
    if isinstance(value, dict):
        return {
            k: (MASK if v is not None else None) if is_secret_name(k) else masked(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [masked(v) for v in value]
    return value
