"""Across states, from a state document alone: which `terraform_remote_state` data sources
read a state of this server, and which resource instances an output's value came from.

Both are pure: app/graph/links.py stores what they find (README, "Across states").
"""

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from app.tfstate.parse import InstanceRow, OutputRow

_DEFAULT_PORTS = {"http": 80, "https": 443}
_STATES = "/states/"


@dataclass(frozen=True)
class Server:
    """A base URL of this server: scheme, host, port and the path prefix it is served at.

    `readable`, when given, says which state names the writer may read: a state it may
    not read is to its write what another server's is (no link, no mask from it), so
    what is stored from a write, and read back, never depends on a hidden state."""

    scheme: str
    host: str
    port: int
    prefix: str
    readable: Callable[[str], bool] | None = field(default=None, compare=False)

    @classmethod
    def parse(cls, url: str) -> "Server":
        parts = urlsplit(url.strip())
        if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
            raise ValueError(f"not an http(s) base URL: {url!r}")
        port = parts.port or _DEFAULT_PORTS[parts.scheme]
        return cls(parts.scheme, parts.hostname.lower(), port, parts.path.rstrip("/"))

    def state_name(self, address: str) -> str | None:
        """The state `address` names on this server: `{base}/states/{name}`, the name
        URL-decoded; None for any other address."""
        try:
            parts = urlsplit(address.strip())
            port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
        except ValueError:  # a port out of range, a malformed IPv6 host
            return None
        if (parts.scheme, (parts.hostname or "").lower(), port) != (
            self.scheme,
            self.host,
            self.port,
        ):
            return None
        if not parts.path.startswith(self.prefix + _STATES):
            return None
        name = unquote(parts.path[len(self.prefix) + len(_STATES) :])
        if self.readable is not None and not self.readable(name):
            return None
        return name or None


def producer_name(address: Any, servers: Sequence[Server]) -> str | None:
    """The state of this server that a remote-state address points at, if any."""
    if not isinstance(address, str):
        return None
    for server in servers:
        if (name := server.state_name(address)) is not None:
            return name
    return None


@dataclass(frozen=True)
class RemoteRead:
    """A `terraform_remote_state` instance reading a state of this server."""

    position: int  # in the document's instances
    producer: str  # the producer state's name
    outputs: dict[str, Any]  # the output values it read, by name


REMOTE_STATE = "terraform_remote_state"


def _dynamic(value: Any) -> Any:
    """A dynamically typed attribute is stored as {"value": ..., "type": ...}."""
    if isinstance(value, dict) and value.keys() == {"value", "type"}:
        return value["value"]
    return value


def remote_reads(instances: Sequence[InstanceRow], servers: Sequence[Server]) -> list[RemoteRead]:
    """The `terraform_remote_state` instances (http backend) whose `config.address` is a
    state of this server."""
    reads = []
    for position, row in enumerate(instances):
        if row.mode != "data" or row.type != REMOTE_STATE or row.deposed is not None:
            continue
        attributes = row.attributes if isinstance(row.attributes, dict) else {}
        if attributes.get("backend") != "http":
            continue
        config = _dynamic(attributes.get("config"))
        address = config.get("address") if isinstance(config, dict) else None
        if (producer := producer_name(address, servers)) is None:
            continue
        reads.append(RemoteRead(position, producer, remote_outputs(attributes)))
    return reads


def remote_outputs(attributes: dict[str, Any]) -> dict[str, Any]:
    """The outputs a `terraform_remote_state` instance read, by name."""
    outputs = _dynamic(attributes.get("outputs"))
    return outputs if isinstance(outputs, dict) else {}


# Output lineage. A value links an output to instances only when it says who it is: a
# string of at least MIN_LENGTH characters, not all digits (ids, ARNs, names; never
# `true`, "1" or "us-east-1"), held by at most MAX_SOURCES instances once the instances
# that depend on another holder are left out (a subnet's `vpc_id` came from the VPC).
MIN_LENGTH = 10
MAX_SOURCES = 3

Path = tuple[str, ...]


def _leaves(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, (*path, str(index)))
    else:
        yield path, value


def meaningful(value: Any) -> bool:
    """Whether a value is specific enough to tell where an output came from."""
    return isinstance(value, str) and len(value) >= MIN_LENGTH and not value.isdigit()


@dataclass(frozen=True)
class Lineage:
    output: str
    position: int  # the instance's, in the document
    path: Path  # the attribute holding the value


def output_values(outputs: Sequence[OutputRow]) -> dict[str, set[str]]:
    """The meaningful values of the outputs: value -> the outputs holding it."""
    wanted: dict[str, set[str]] = {}
    for output in outputs:
        for _, leaf in _leaves(output.value):
            if meaningful(leaf):
                wanted.setdefault(leaf, set()).add(output.name)
    return wanted


def holds_output_value(wanted: dict[str, set[str]], instances: Iterable[InstanceRow]) -> bool:
    """Whether any of `instances` holds one of the outputs' meaningful values (`wanted`:
    output_values)."""
    return bool(wanted) and any(
        isinstance(leaf, str) and leaf in wanted
        for row in instances
        for _, leaf in _leaves(row.attributes)
    )


def output_lineage(
    outputs: Sequence[OutputRow],
    attributes: Iterable[Any],
    edges: Callable[[], Iterable[tuple[int, int]]],
) -> set[Lineage]:
    """Each output's sources: the instances holding a meaningful value of it (the value,
    or a string inside it), with the attribute path. `attributes`: of each instance, in
    document order; `edges()`: (a, b) when a depends on b (asked only when a value has
    several holders)."""
    wanted = output_values(outputs)
    if not wanted:
        return set()
    holders: dict[str, dict[int, list[Path]]] = {}  # value -> instance -> paths
    for position, values in enumerate(attributes):
        for path, leaf in _leaves(values):
            if isinstance(leaf, str) and leaf in wanted:
                holders.setdefault(leaf, {}).setdefault(position, []).append(path)
    depends: set[tuple[int, int]] | None = None
    found: set[Lineage] = set()
    for value, held in holders.items():
        sources = list(held)
        if len(held) > 1:
            depends = set(edges()) if depends is None else depends
            sources = [p for p in held if not any((p, q) in depends for q in held if q != p)]
        if len(sources) > MAX_SOURCES:
            continue  # a common value: it tells nothing of where the output came from
        for name in wanted[value]:
            for position in sources:
                found.update(Lineage(name, position, path) for path in held[position])
    return found
