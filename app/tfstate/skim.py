"""A document cut at its resources, each kept as its bytes until a write reads it.

msgspec reads a document's structure in C and gives each top-level member, then each
resource, back as its bytes (msgspec.Raw), unparsed: 30 ms for a 21 MB state whose
full parse takes 160 ms. The members other than the resources are parsed at once,
each resource when a write reads it, both as `app.jsonutil.read` parses a document.
Each resource's bytes have a digest: a write that remembers what the version it wrote
last held (app/graph/write/memo.py) keeps the rows of a resource whose bytes are the
same without reading it at all.

Whatever the skim is unsure of (not an object, no `version`, `resources` not a list, a
key holding U+0000 or a lone surrogate) raises NotStreamable: the caller reads the
document whole, which says exactly what is wrong with it. So does a resource that is
not valid JSON when the write reads it.
"""

import contextlib
import hashlib
from collections.abc import Iterator, Mapping
from typing import Any, Generic, NamedTuple, TypeVar

import msgspec

from app.config import MIB
from app.jsonutil import JsonInputError, check_value, read
from app.process import gc_paused
from app.tfstate.parse import document_head
from app.tfstate.scan import ScannedInstance, ScannedState, instances_of, scan_state
from app.tfstate.stream import NotStreamable

# A skim holds the whole body in memory while the write runs (a 20,000-instance state as
# Terraform writes it, indented, is 41 MiB); bigger bodies are read a resource at a time
# from their file (app/tfstate/stream.py).
SKIM_MAX_BYTES = 64 * MIB

_MEMBERS = msgspec.json.Decoder(dict[str, msgspec.Raw])
_RESOURCES = msgspec.json.Decoder(list[msgspec.Raw])

T = TypeVar("T")


class SkippedResource(NamedTuple, Generic[T]):
    """A resource whose bytes a write remembered (`remembered`), at `position` now."""

    position: int
    remembered: T


def digest(raw: bytes | msgspec.Raw) -> bytes:
    """What identifies a resource's bytes."""
    return hashlib.sha256(raw).digest()  # in hardware on most CPUs: faster than blake2b


class SkimmedState(ScannedState):
    """A ScannedState whose resources are bytes, each parsed when a pass reads it; with
    the digest of each resource's bytes, in document order."""

    def __init__(self, members: dict[str, Any], resources: list[msgspec.Raw]):
        super().__init__(document_head(members), self._parsed)
        self._raw = resources  # views of the body (each holds it)
        self.digests = [digest(raw) for raw in resources]

    def _parsed(self) -> Iterator[Any]:
        for raw in self._raw:
            yield _read(raw, level=3)

    def items(
        self, remembered: Mapping[bytes, T]
    ) -> Iterator[ScannedInstance | SkippedResource[T]]:
        """One pass: a resource whose digest is in `remembered` as one SkippedResource
        (not read), every other resource's instances as ScannedState.instances has them."""
        for index, (raw, found) in enumerate(zip(self._raw, self.digests, strict=True)):
            kept = remembered.get(found)
            if kept is not None:
                yield SkippedResource(index, kept)
            else:
                yield from instances_of(index, _read(raw, level=3))


def _read(raw: bytes | msgspec.Raw, *, level: int) -> Any:
    try:
        return read(bytes(raw), level=level)
    except JsonInputError:
        raise NotStreamable("refused by the JSON checks") from None


def skim_document(data: bytes) -> SkimmedState:
    """The v4 state document `data`, skimmed; raises NotStreamable (read it whole) when
    it is not one this reader takes, StateError when its fields are invalid."""
    try:
        raw_members = _MEMBERS.decode(data)
        listed = "resources" in raw_members
        resources = _RESOURCES.decode(raw_members.pop("resources", b"[]"))
    except (msgspec.DecodeError, RecursionError):  # msgspec recurses as deep as the JSON
        raise NotStreamable("not a JSON object holding a list of resources") from None
    if "version" not in raw_members:  # an encrypted state's envelope, or not a state
        raise NotStreamable("no 'version'")
    members: dict[str, Any] = {}
    with gc_paused():
        for key, raw in raw_members.items():
            try:
                check_value(key, level=2, strings=True)
            except JsonInputError:
                raise NotStreamable("a key is refused by the JSON checks") from None
            members[key] = _read(raw, level=2)
    if listed:
        members["resources"] = []  # present: not an omitted member
    return SkimmedState(members, resources)


def skim_or_scan(data: bytes) -> ScannedState:
    """The v4 state document `data` skimmed when it can be, else scanned whole (which
    raises StateError with the reason)."""
    if len(data) <= SKIM_MAX_BYTES:
        with contextlib.suppress(NotStreamable):
            return skim_document(data)
    return scan_state(data)
