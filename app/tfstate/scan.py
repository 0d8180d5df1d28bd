"""A light parse for a write that keeps most of the current version.

A Terraform write usually changes a few instances of thousands. Normalizing every
instance (validating each field, splitting extras, building a row, hashing it) cost
more than half of such a write. A scan validates the document's own fields and gives
each instance a raw hash: of its whole resource exactly as parsed (one hash per
resource) and of its place in it. The write (app/graph/write/stream.py) keeps the
current row whose stored raw hash is the same, and validates and normalizes only the
other instances (with their resource's fields).

The same raw hash means the same resource object, so the same normalized rows
(normalization is a function of it, positions aside, which a row does not hold): the
content hash (app/tfstate/digest.py) of the rows is what it was, and the kept ones were
validated when they were written. A different raw hash says nothing (another instance of
the resource changed, keys in another order, a row written before raw hashes): the
instance is normalized, and its row kept if its content hash matches.
"""

import hashlib
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, cast

import orjson

from app.jsonutil import dumps
from app.process import gc_paused
from app.tfstate.parse import (
    DocumentHead,
    InstanceRow,
    InstanceShape,
    OutputRow,
    ResourceHeader,
    document_head,
    instance_row,
    load_document,
    resource_header,
    resource_list,
)
from app.tfstate.stream import StreamedDocument


class InstanceRef(NamedTuple):
    """What edges and layouts read of a kept instance (parse.InstanceShape), read from
    the object as parsed: the kept row says it was valid, so its values are the row's."""

    address: str
    resource_index: int
    instance_index: int
    mode: str
    type: str
    name: str
    module_path: str | None
    index_key: Any
    deposed: str | None
    dependencies_raw: Any
    depends_on_raw: Any

    @classmethod
    def of(cls, row: InstanceShape) -> "InstanceRef":
        """What edges and layouts read of a row (its attributes not kept)."""
        return cls(
            row.address,
            row.resource_index,
            row.instance_index,
            row.mode,
            row.type,
            row.name,
            row.module_path,
            row.index_key,
            row.deposed,
            row.dependencies_raw,
            row.depends_on_raw,
        )


class ScannedResource:
    """A resource of the document as parsed; validated (its header) when first needed."""

    def __init__(self, index: int, raw: Any) -> None:
        self.index = index
        self.raw = raw
        self._header: ResourceHeader | None = None

    def header(self) -> ResourceHeader:
        if self._header is None:
            self._header = resource_header(self.index, self.raw)
        return self._header


class ScannedInstance(NamedTuple):
    resource: ScannedResource
    position: int  # in its resource
    raw: Any  # the instance object as parsed
    raw_hash: bytes  # its resource's hash, then its index (4 bytes)

    def row(self, seen: set[str]) -> InstanceRow:
        """Validated and normalized (parse.instance_row), its resource first."""
        return instance_row(self.resource.header(), self.position, self.raw, seen)

    def ref(self, address: str) -> InstanceRef:
        """The reference of a kept instance, whose row is at `address`."""
        resource, raw = self.resource.raw, self.raw
        return InstanceRef(
            address,
            self.resource.index,
            self.position,
            resource["mode"],
            resource["type"],
            resource["name"],
            resource.get("module"),
            raw.get("index_key"),
            raw.get("deposed"),
            raw.get("dependencies"),
            raw.get("depends_on"),
        )


class ScannedState:
    """A scanned document: its fields (`head`), and its instances a pass at a time, as a
    NormalizedState has them. A streamed document (app/tfstate/stream.py) is read again
    from its file for each pass; its head is complete once a pass has read it all."""

    encrypted = False

    def __init__(self, head: DocumentHead, resources: Callable[[], Iterator[Any]]) -> None:
        self.head = head
        self._resources = resources

    @property
    def serial(self) -> int:
        return self.head.serial

    @property
    def lineage(self) -> str:
        return self.head.lineage

    @property
    def terraform_version(self) -> str | None:
        return self.head.terraform_version

    @property
    def outputs(self) -> list[OutputRow]:
        return self.head.outputs

    @property
    def extra(self) -> dict[str, Any]:
        return self.head.extra

    @property
    def omitted(self) -> list[str]:
        return self.head.omitted

    def resources(self) -> Iterator[Any]:
        """One pass over the document's resources as parsed, not validated."""
        return self._resources()

    def instances(self) -> Iterator[ScannedInstance]:
        """One pass over the document's instances, each with its raw hash: of its resource
        as parsed (all of it, one hash each) and of its place in it."""
        for index, raw in enumerate(self._resources()):
            yield from instances_of(index, raw)


def instances_of(index: int, raw: Any) -> Iterator[ScannedInstance]:
    """The instances of the resource `raw` at `index` of its document, as parsed."""
    resource = ScannedResource(index, raw)
    items = raw.get("instances") if isinstance(raw, dict) else None
    if not isinstance(items, list) or not items:
        resource.header()  # raises: no instance of it would be normalized to say why
    digest = resource_hash(raw)
    for position, instance in enumerate(cast(list[Any], items)):
        raw_hash = digest + position.to_bytes(4, "big")
        yield ScannedInstance(resource, position, instance, raw_hash)


def resource_hash(raw: Any) -> bytes:
    """The hash of a resource as parsed, all of it: its instances' raw hashes begin with it."""
    return hashlib.blake2b(_encode(raw), digest_size=16).digest()


def _encode(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # integers past 64 bits: the exact (slower) path
        return dumps(value)


def scan_document(doc: dict[str, Any]) -> ScannedState:
    """A loaded v4 state document, validated but for its resources' fields and instances
    (ScannedInstance.row validates and normalizes those a write needs)."""
    head = document_head(doc)
    resources = resource_list(doc.get("resources", []))
    return ScannedState(head, lambda: iter(resources))


def scan_stream(open_file: Callable[[], Callable[[int], bytes]]) -> ScannedState:
    """A document read from a file by `read(size)` functions (`open_file()` gives one from
    its start), a resource at a time; raises NotStreamable when it must be read whole."""
    first = StreamedDocument(open_file())
    state = ScannedState(document_head(first.head), lambda: _streamed(state, first, open_file))
    return state


def _streamed(
    state: ScannedState,
    first: StreamedDocument,
    open_file: Callable[[], Callable[[int], bytes]],
) -> Iterator[Any]:
    document = first if first.fresh else StreamedDocument(open_file())
    yield from document.resources()
    members = {**document.head, **document.tail()}
    if document.has_resources:
        members["resources"] = []
    state.head = document_head(members)


def scan_state(body: bytes | str) -> ScannedState:
    """Scan a v4 state document; raise StateError with the reason."""
    with gc_paused():
        return scan_document(load_document(body))
