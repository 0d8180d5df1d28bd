"""Parse a Terraform v4 state document and normalize it into rows.

One row per resource instance object, with the columns of the `resources`
table. Conventions that make the round trip exact:

- a column is None when its key was absent from the document;
- a JSON `null` in a JSONB column is `JSON_NULL` (stored as JSON null);
- a key the schema does not normalize, or a scalar key holding `null`, is
  kept verbatim in `extra` (instance level) or `resource_extra` (resource
  level, repeated on each of its instances).
"""

import functools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from app.errors import BadInput
from app.jsonutil import JSON_NULL, JsonInputError, read
from app.process import gc_paused
from app.tfstate.address import instance_address, module_config_path, resource_key

MODES = ("managed", "data")
# Serials are GraphQL `Int`s (32-bit): Terraform adds one per write, so no real
# state gets near it, and every client reads an Int natively (a 64-bit scalar
# would be a string to JavaScript). Other integer columns are PostgreSQL bigint.
MAX_SERIAL = 2**31 - 1
_BIGINT = 2**63
# A btree index row holds at most 2,704 bytes: addresses and output names are
# indexed, with a uuid beside them.
MAX_INDEXED_BYTES = 2_000


class StateError(BadInput, ValueError):
    """The document is not a valid Terraform v4 state; the message says why."""


class InstanceRow(NamedTuple):
    address: str
    resource_index: int
    instance_index: int
    mode: str
    type: str
    name: str
    provider: str
    module_path: str | None
    each: str | None
    index_key: Any
    deposed: str | None
    status: str | None
    schema_version: int | None
    attributes: Any
    attributes_flat: Any
    sensitive_attributes: Any
    private: str | None
    dependencies_raw: Any
    depends_on_raw: Any
    create_before_destroy: bool | None
    identity: Any
    identity_schema_version: int | None
    extra: dict[str, Any]
    resource_extra: dict[str, Any]


class OutputRow(NamedTuple):
    name: str
    position: int
    value: Any
    type: Any
    sensitive: bool | None
    extra: dict[str, Any]


class InstanceShape(Protocol):
    """What edges and layouts read of an instance: an InstanceRow, or a kept instance's
    reference (app/tfstate/scan.py) that a write does not normalize again."""

    @property
    def address(self) -> str: ...
    @property
    def resource_index(self) -> int: ...
    @property
    def instance_index(self) -> int: ...
    @property
    def mode(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def module_path(self) -> str | None: ...
    @property
    def index_key(self) -> Any: ...
    @property
    def deposed(self) -> str | None: ...
    @property
    def dependencies_raw(self) -> Any: ...
    @property
    def depends_on_raw(self) -> Any: ...


INSTANCE_COLUMNS = InstanceRow._fields
OUTPUT_COLUMNS = OutputRow._fields


@dataclass
class NormalizedState:
    serial: int
    lineage: str
    terraform_version: str | None
    instances: list[InstanceRow]
    outputs: list[OutputRow]
    extra: dict[str, Any] = field(default_factory=dict)
    omitted: list[str] = field(default_factory=list)
    # An OpenTofu state encrypted on the client: the version has no rows to read
    encrypted: bool = False

    @functools.cached_property
    def edges(self) -> list[tuple[int, int]]:
        """Every dependency edge, as (from, to) positions in `instances`."""
        return resolve_edges(self.instances)


# Keys normalized into columns, and the Python types their values must have.
_INT = (int,)
_STR = (str,)
_BOOL = (bool,)
_ANY = None  # any JSON value: a JSONB column
_STATE_KEYS = {"version", "serial", "lineage", "terraform_version", "outputs", "resources"}
_RESOURCE_KEYS = {"mode", "type", "name", "provider", "module", "each", "instances"}
_INSTANCE_FIELDS: dict[str, tuple[type, ...] | None] = {
    "index_key": (int, str),
    "deposed": _STR,
    "status": _STR,
    "schema_version": _INT,
    "attributes": _ANY,
    "attributes_flat": _ANY,
    "sensitive_attributes": _ANY,
    "private": _STR,
    "dependencies": _ANY,
    "depends_on": _ANY,
    "create_before_destroy": _BOOL,
    "identity": _ANY,
    "identity_schema_version": _INT,
}
_OUTPUT_FIELDS: dict[str, tuple[type, ...] | None] = {
    "value": _ANY,
    "type": _ANY,
    "sensitive": _BOOL,
}


def _is(value: Any, types: tuple[type, ...]) -> bool:
    # bool is an int in Python, but not in JSON
    return isinstance(value, types) and (bool in types or not isinstance(value, bool))


def _split(
    obj: dict[str, Any], fields: dict[str, tuple[type, ...] | None], where: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split an object into normalized column values and verbatim extras."""
    columns: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in obj.items():
        types = fields.get(key, ...)
        if types is ...:
            extra[key] = value
        elif types is None:
            columns[key] = JSON_NULL if value is None else value
        elif value is None:
            extra[key] = None  # a scalar key holding null: nothing to normalize
        elif _is(value, types):
            if types is _INT and not -_BIGINT <= value < _BIGINT:
                raise StateError(f"{where}: {key!r} is outside the 64-bit integer range")
            columns[key] = value
        else:
            raise StateError(
                f"{where}: {key!r} must be {_type_name(types)}, got {json_type(value)}"
            )
    return columns, extra


def _type_name(types: tuple[type, ...]) -> str:
    names = {
        int: "an integer",
        str: "a string",
        bool: "a boolean",
        dict: "an object",
        list: "a list",
    }
    return " or ".join(names[t] for t in types)


def json_type(value: Any) -> str:
    """How a JSON value's type is named in error messages."""
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def _require(obj: dict[str, Any], key: str, types: tuple[type, ...], where: str) -> Any:
    if key not in obj:
        raise StateError(f"{where}: missing required field {key!r}")
    value = obj[key]
    if not _is(value, types):
        raise StateError(f"{where}: {key!r} must be {_type_name(types)}, got {json_type(value)}")
    return value


def check_serial(serial: int, where: str, error: type[StateError] = StateError) -> int:
    if not 0 <= serial <= MAX_SERIAL:
        raise error(f"{where}: 'serial' must be between 0 and {MAX_SERIAL}, got {serial}")
    return serial


def parse_state(body: bytes | str) -> NormalizedState:
    """Parse and validate a v4 state document; raise StateError with the reason."""
    with gc_paused():
        return normalize_document(load_document(body))


def load_document(body: bytes | str) -> dict[str, Any]:
    """The JSON object of a state body (call with the GC paused: it may be huge)."""
    try:
        doc = read(body)
    except JsonInputError as exc:
        raise StateError(str(exc)) from None
    if not isinstance(doc, dict):
        raise StateError(f"a state must be a JSON object, got {json_type(doc)}")
    return doc


@dataclass(frozen=True)
class DocumentHead:
    """A document's fields but its resources, validated (its outputs normalized)."""

    serial: int
    lineage: str
    terraform_version: str | None
    outputs: list[OutputRow]
    extra: dict[str, Any]
    omitted: list[str]


def document_head(doc: dict[str, Any]) -> DocumentHead:
    """A loaded v4 state document's fields but its resources, validated."""
    if "version" not in doc:
        raise StateError("missing required field 'version'")
    if doc["version"] != 4 or isinstance(doc["version"], bool):
        raise StateError(
            f"unsupported state version {doc['version']!r}: only version 4 is supported"
        )
    serial = check_serial(_require(doc, "serial", _INT, "state"), "state")
    lineage = _require(doc, "lineage", _STR, "state")
    terraform_version = doc.get("terraform_version")
    if terraform_version is not None and not isinstance(terraform_version, str):
        raise StateError(
            f"state: 'terraform_version' must be a string, got {json_type(terraform_version)}"
        )

    extra = {k: v for k, v in doc.items() if k not in _STATE_KEYS}
    if "terraform_version" in doc and terraform_version is None:
        extra["terraform_version"] = None
    omitted = [k for k in ("outputs", "resources") if k not in doc]
    outputs = _outputs(doc.get("outputs", {}))
    return DocumentHead(serial, lineage, terraform_version, outputs, extra, omitted)


def normalize_document(doc: dict[str, Any]) -> NormalizedState:
    """A loaded v4 state document, validated and normalized into rows."""
    head = document_head(doc)
    return NormalizedState(
        serial=head.serial,
        lineage=head.lineage,
        terraform_version=head.terraform_version,
        instances=_instances(doc.get("resources", [])),
        outputs=head.outputs,
        extra=head.extra,
        omitted=head.omitted,
    )


def _outputs(outputs: Any) -> list[OutputRow]:
    if not isinstance(outputs, dict):
        raise StateError(f"state: 'outputs' must be an object, got {json_type(outputs)}")
    rows = []
    for position, (name, output) in enumerate(outputs.items()):
        where = f"output {name!r}"
        _indexable(name, where)
        if not isinstance(output, dict):
            raise StateError(f"{where}: must be an object, got {json_type(output)}")
        columns, extra = _split(output, _OUTPUT_FIELDS, where)
        rows.append(
            OutputRow(
                name,
                position,
                columns.get("value"),
                columns.get("type"),
                columns.get("sensitive"),
                extra,
            )
        )
    return rows


def _instances(resources: Any) -> list[InstanceRow]:
    rows: list[InstanceRow] = []
    seen: set[str] = set()
    for header in resource_headers(resources):
        for instance_index, instance in enumerate(header.instances):
            rows.append(instance_row(header, instance_index, instance, seen))
    return rows


@dataclass(frozen=True)
class ResourceHeader:
    """A resource of the document, validated, with its instances still as parsed."""

    index: int
    where: str  # how error messages name it
    mode: str
    type: str
    name: str
    provider: str
    module: str | None
    each: str | None
    extra: dict[str, Any]  # its verbatim keys (each instance row's resource_extra)
    instances: list[Any]


def resource_list(resources: Any) -> list[Any]:
    if not isinstance(resources, list):
        raise StateError(f"state: 'resources' must be a list, got {json_type(resources)}")
    return resources


def resource_headers(resources: Any) -> Iterator[ResourceHeader]:
    """The document's resources in order, each validated but for its instances."""
    for resource_index, resource in enumerate(resource_list(resources)):
        yield resource_header(resource_index, resource)


def resource_header(resource_index: int, resource: Any) -> ResourceHeader:
    """A resource of the document, validated but for its instances."""
    where = f"resources[{resource_index}]"
    if not isinstance(resource, dict):
        raise StateError(f"{where}: must be an object, got {json_type(resource)}")
    mode = _require(resource, "mode", _STR, where)
    rtype = _require(resource, "type", _STR, where)
    name = _require(resource, "name", _STR, where)
    where = f"{where} ({'data.' if mode == 'data' else ''}{rtype}.{name})"
    if mode not in MODES:
        raise StateError(f"{where}: 'mode' must be 'managed' or 'data', got {mode!r}")
    provider = _require(resource, "provider", _STR, where)
    instances = _require(resource, "instances", (list,), where)
    module = _optional_str(resource, "module", where)
    each = _optional_str(resource, "each", where)
    if not instances:  # Terraform prunes these; a row per instance cannot hold one
        raise StateError(f"{where}: a resource with no instances cannot be stored")
    resource_extra = {k: v for k, v in resource.items() if k not in _RESOURCE_KEYS}
    for key in ("module", "each"):
        if key in resource and resource[key] is None:
            resource_extra[key] = None
    return ResourceHeader(
        resource_index, where, mode, rtype, name, provider, module, each, resource_extra, instances
    )


def instance_row(
    header: ResourceHeader, instance_index: int, instance: Any, seen: set[str]
) -> InstanceRow:
    """An instance of `header`, validated and normalized; its address must not be in
    `seen` (the addresses before it), where it goes."""
    iwhere = f"{header.where} instance {instance_index}"
    if not isinstance(instance, dict):
        raise StateError(f"{iwhere}: must be an object, got {json_type(instance)}")
    c, extra = _split(instance, _INSTANCE_FIELDS, iwhere)
    address = instance_address(
        header.module, header.mode, header.type, header.name, c.get("index_key"), c.get("deposed")
    )
    _indexable(address, iwhere)
    if address in seen:
        raise StateError(f"{iwhere}: duplicate instance address {address}")
    seen.add(address)
    for key in ("dependencies", "depends_on"):
        deps = c.get(key)
        if deps is not None and not (
            isinstance(deps, list) and all(isinstance(d, str) for d in deps)
        ):
            raise StateError(f"{iwhere} ({address}): {key!r} must be a list of strings")
    return InstanceRow(
        address,
        header.index,
        instance_index,
        header.mode,
        header.type,
        header.name,
        header.provider,
        header.module,
        header.each,
        c.get("index_key"),
        c.get("deposed"),
        c.get("status"),
        c.get("schema_version"),
        c.get("attributes"),
        c.get("attributes_flat"),
        c.get("sensitive_attributes"),
        c.get("private"),
        c.get("dependencies"),
        c.get("depends_on"),
        c.get("create_before_destroy"),
        c.get("identity"),
        c.get("identity_schema_version"),
        extra,
        header.extra,
    )


def _indexable(text: str, where: str) -> None:
    if len(text) * 4 > MAX_INDEXED_BYTES and len(text.encode()) > MAX_INDEXED_BYTES:
        raise StateError(
            f"{where[:200]}: the name or address is longer than {MAX_INDEXED_BYTES} bytes"
        )


def _optional_str(obj: dict[str, Any], key: str, where: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise StateError(f"{where}: {key!r} must be a string, got {json_type(value)}")
    return value


def resolve_edges(
    instances: Sequence[InstanceShape], touching: set[int] | None = None
) -> list[tuple[int, int]]:
    """Edges from each instance to every current instance of the resources it names;
    with `touching`, only the edges from or to those positions (a write that keeps the
    other rows keeps the edges between them, app/graph/write/edges.py).

    `dependencies` name resources by absolute config address (module keys
    dropped); legacy `depends_on` names them relative to the instance's own
    module. Names that resolve to nothing (`var.input`) stay only in the raw
    columns.
    """
    by_resource: dict[str, list[int]] = {}
    for position, row in enumerate(instances):
        if row.deposed is None:
            key = resource_key(row.module_path, row.mode, row.type, row.name)
            by_resource.setdefault(key, []).append(position)
    named = [named_resources(row) for row in instances]
    if touching is None:
        sources: Iterable[int] = range(len(instances))
    else:
        # the given rows, and every row naming a resource one of them is an instance of
        targets = {
            resource_key(r.module_path, r.mode, r.type, r.name)
            for r in (instances[p] for p in touching)
            if r.deposed is None
        }
        sources = [
            p for p, names in enumerate(named) if p in touching or not targets.isdisjoint(names)
        ]
    edges: list[tuple[int, int]] = []
    for position in sources:
        reached: dict[int, None] = {}  # in order, once each
        for name in named[position]:
            for target in by_resource.get(name, ()):
                if target != position and (
                    touching is None or position in touching or target in touching
                ):
                    reached[target] = None
        edges += ((position, target) for target in reached)
    return edges


def named_resources(row: InstanceShape) -> list[str]:
    """The config addresses of the resources an instance depends on (not to be changed:
    its `dependencies` list itself, when it has nothing else)."""
    if not isinstance(row.depends_on_raw, list):
        return row.dependencies_raw if isinstance(row.dependencies_raw, list) else []
    names: list[str] = []
    if isinstance(row.dependencies_raw, list):
        names.extend(row.dependencies_raw)
    if isinstance(row.depends_on_raw, list):
        module = module_config_path(row.module_path)
        names.extend(f"{module}.{name}" if module else name for name in row.depends_on_raw)
    return names
