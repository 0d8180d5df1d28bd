"""Values Terraform marks sensitive are withheld from readers (shown as null).

`sensitive_attributes` is a list of cty paths, each a list of steps:
`{"type": "get_attr", "value": "password"}` or
`{"type": "index", "value": {"value": 0, "type": "number"}}`. A path here is
a tuple of keys: attribute names, and list indexes or map keys as strings.

A cty path names values, not JSON: an attribute of dynamic type (`terraform_data`'s
`input`, `terraform_remote_state`'s `config`) is stored as {"value": ..., "type": ...},
and the path `input.password` is at `input.value.password` in the document. `locate`
finds the JSON path of a cty path in a document.

Secrets are also taken out of a row when a version is stored (`Stored`, `split`), so
that search and filters never see them, and put back to render the document (`join`).
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from uuid import UUID

from app import crypto
from app.jsonutil import JSON_NULL, dumps, loads
from app.secretnames import secret_paths
from app.tfstate import InstanceRow, OutputRow
from app.tfstate.digest import canonical_json, instance_digest, output_digest

Path = tuple[str, ...]
EVERYTHING: list[Path] = [()]


def sensitive_paths(raw: Any) -> list[Path]:
    """The paths of `sensitive_attributes`; a shape not understood withholds more, not less."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        return EVERYTHING
    paths = []
    for steps in raw:
        if not isinstance(steps, list):
            return EVERYTHING
        path: list[str] = []
        for step in steps:
            key = _step_key(step)
            if key is None:
                break  # an unknown step: withhold everything under the known part
            path.append(key)
        paths.append(tuple(path))
    return paths


def _step_key(step: Any) -> str | None:
    if not isinstance(step, dict):
        return None
    value = step.get("value")
    if step.get("type") == "get_attr" and isinstance(value, str):
        return value
    if step.get("type") == "index" and isinstance(value, dict):
        key = value.get("value")
        if isinstance(key, str):
            return key
        if isinstance(key, int | float) and not isinstance(key, bool) and key == int(key):
            return str(int(key))
    return None


def overlaps(path: Path, paths: list[Path]) -> bool:
    """True when `path` is inside a sensitive value or holds one."""
    return any(path[: len(s)] == s or s[: len(path)] == path for s in paths)


def withhold(value: Any, paths: list[Path], mask: Any = None) -> Any:
    """A copy of `value` with the value at each path replaced by `mask` (null)."""
    for path in located(value, paths):
        value = _put(value, path, mask)
    return value


def is_index(key: str, value: list[Any]) -> bool:
    """Whether a path step is an index of the list (ASCII digits: "²" is a digit to
    str.isdigit() but not to int())."""
    return key.isascii() and key.isdigit() and int(key) < len(value)


def locate(value: Any, path: Path) -> Path | None:
    """The JSON path in `value` of the cty path `path`, through dynamic values'
    {"value", "type"} wrappers; None when it leads nowhere."""
    found: list[str] = []
    for key in path:
        if isinstance(value, dict) and key not in value and _is_dynamic(value):
            found.append("value")
            value = value["value"]
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and is_index(key, value):
            value = value[int(key)]
        else:
            return None
        found.append(key)
    return tuple(found)


def located(value: Any, paths: list[Path]) -> list[Path]:
    """The JSON paths in `value` of those of `paths` that lead somewhere."""
    return [found for path in paths if (found := locate(value, path)) is not None]


def _is_dynamic(value: dict[str, Any]) -> bool:
    return len(value) == 2 and "value" in value and isinstance(value.get("type"), list | str)


# --- secret by convention -----------------------------------------------------------------


def convention_paths(mode: str, type_: str, attributes: Any, marked: list[Path]) -> list[Path]:
    """Paths Terraform does not mark but that hold secrets: the credentials in a
    `terraform_remote_state` instance's backend `config`, at any depth (Terraform stores
    that dynamic value as {"value": ..., "type": ...}; older states the object alone);
    and in a `terraform_data`, the `output` paths of the `input` paths Terraform marks
    (`marked`): output is input again, unmarked."""
    if mode == "managed" and type_ == "terraform_data":
        return [("output", *path[1:]) for path in marked if path[:1] == ("input",)]
    if mode != "data" or type_ != "terraform_remote_state" or not isinstance(attributes, dict):
        return []
    config = attributes.get("config")
    if isinstance(config, dict) and _is_dynamic(config):
        config = config["value"]  # the paths are cty paths: `locate` steps in again
    # credentials by their name (app/secretnames.py: the rule IaC and the catalog use)
    return list(secret_paths(config, ("config",)))


# --- secrets kept apart -------------------------------------------------------------------

# A value taken out of a document, at its path. Stored apart from the document
# (`Stored`), so that what is searched and shown never holds it.
Secret = tuple[Path, Any]


def split(value: Any, paths: list[Path]) -> tuple[Any, list[Secret]]:
    """`value` with the value at each path replaced by null, and the values taken, in
    order, each at its JSON path (`locate`); a path that leads nowhere, or to null,
    takes nothing."""
    secrets: list[Secret] = []
    for path in paths:
        found = locate(value, path)
        if found is None:
            continue
        secret = _at(value, found)
        if secret is None or secret is JSON_NULL:
            continue
        secrets.append((found, secret))
        value = _put(value, found, None)
    return value, secrets


def join(value: Any, secrets: list[Secret]) -> Any:
    """The value `split` was given, from what it returned."""
    for path, secret in reversed(secrets):  # an outer path was taken after an inner one
        value = _put(value, path, secret)
    return value


def restore(value: Any, secrets: list[Secret]) -> Any:
    """A stored value (JSON null at the top: JSON_NULL or None) with its secrets back."""
    if not secrets:
        return value
    return join(None if value is JSON_NULL else value, secrets)


def opened(stored: bytes | None, state_id: UUID) -> list[Secret]:
    """The secrets of a stored row, from its `secrets` column: none when NULL, or b''
    (a row written before migration 0014, which holds them in place)."""
    if not stored:
        return []
    return unpack(crypto.keyring().open(stored, state_id.bytes))


def pack_form(secrets: list[Secret]) -> list[list[Any]]:
    return [[list(path), secret] for path, secret in secrets]


def pack(secrets: list[Secret]) -> bytes:
    return dumps(pack_form(secrets))


def unpack(packed: bytes) -> list[Secret]:
    return [(tuple(path), secret) for path, secret in loads(packed)]


def _at(value: Any, path: Path) -> Any:
    """The value at a JSON path that `locate` found."""
    for key in path:
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value


def _put(value: Any, path: Path, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict) and head in value:
        return {**value, head: _put(value[head], rest, new)}
    if isinstance(value, list) and is_index(head, value):
        copy = list(value)
        copy[int(head)] = _put(copy[int(head)], rest, new)
        return copy
    return value


# --- a row as stored ----------------------------------------------------------------------

Row = TypeVar("Row", InstanceRow, OutputRow)


@dataclass(frozen=True)
class Stored(Generic[Row]):
    """A row as stored: the secrets taken out of `original`, `taken`, to be stored apart,
    sealed under the keyring's key.

    Its content hash is the original row's as before when it holds no secret, or when
    there is no key (then everything is in clear anyway); with a key, the hash of the
    stored row and of the keyed hash of its secrets, so a stored hash confirms no guess."""

    original: Row
    row: Row
    hash_of: Callable[[Row, bytes | None], bytes]
    taken: list[Secret] = field(default_factory=list)

    def keyed_digest(self, ring: crypto.Keyring) -> bytes | None:
        """The content hash when it is keyed; None when it is the original row's."""
        if not self.taken or not ring.encrypting:
            return None
        return self.hash_of(self.row, ring.mac(canonical_json(pack_form(self.taken))))

    def digest(self, ring: crypto.Keyring) -> bytes:
        return self.keyed_digest(ring) or self.hash_of(self.original, None)

    def sealed(self, ring: crypto.Keyring, state_id: UUID) -> bytes | None:
        return ring.seal(pack(self.taken), state_id.bytes) if self.taken else None


def stored_instance(row: InstanceRow, also: Sequence[Path] = ()) -> Stored[InstanceRow]:
    """The attributes at the paths Terraform marks sensitive, secret by convention, or
    `also` (app/graph/sealing.py) are taken out: search, filters and policies never see them."""
    marked = sensitive_paths(row.sensitive_attributes)
    paths = [*marked, *convention_paths(row.mode, row.type, row.attributes, marked), *also]
    if not paths:
        return Stored(row, row, instance_digest)
    attributes, secrets = split(row.attributes, paths)
    if not secrets:
        return Stored(row, row, instance_digest)
    masked = row._replace(attributes=JSON_NULL if attributes is None else attributes)
    return Stored(row, masked, instance_digest, secrets)


def stored_output(row: OutputRow) -> Stored[OutputRow]:
    """A sensitive output's value is taken out whole."""
    if not row.sensitive or row.value is None or row.value is JSON_NULL:
        return Stored(row, row, output_digest)
    return Stored(row, row._replace(value=JSON_NULL), output_digest, [((), row.value)])
