"""Render normalized rows back into a v4 state document (the inverse of parse)."""

from collections.abc import Iterable
from typing import Any

from app.jsonutil import JSON_NULL
from app.tfstate.parse import InstanceRow, OutputRow

# document key -> InstanceRow field, in the order Terraform writes them
_INSTANCE_KEYS = (
    ("index_key", "index_key"),
    ("deposed", "deposed"),
    ("status", "status"),
    ("schema_version", "schema_version"),
    ("attributes", "attributes"),
    ("attributes_flat", "attributes_flat"),
    ("sensitive_attributes", "sensitive_attributes"),
    ("identity_schema_version", "identity_schema_version"),
    ("identity", "identity"),
    ("private", "private"),
    ("dependencies", "dependencies_raw"),
    ("depends_on", "depends_on_raw"),
    ("create_before_destroy", "create_before_destroy"),
)


def _value(value: Any) -> Any:
    return None if value is JSON_NULL else value


def _present(pairs: Iterable[tuple[str, Any]], extra: dict[str, Any]) -> dict[str, Any]:
    """The keys whose value is not None (= absent), then the verbatim extras."""
    obj = {key: _value(value) for key, value in pairs if value is not None}
    obj.update(extra)
    return obj


def render_state(
    *,
    serial: int,
    lineage: str,
    terraform_version: str | None,
    instances: Iterable[InstanceRow],
    outputs: Iterable[OutputRow],
    extra: dict[str, Any],
    omitted: Iterable[str] = (),
) -> dict[str, Any]:
    """Build the state document. Rows must come in document order."""
    doc: dict[str, Any] = {"version": 4}
    if terraform_version is not None:
        doc["terraform_version"] = terraform_version
    doc["serial"] = serial
    doc["lineage"] = lineage
    omitted = set(omitted)
    if "outputs" not in omitted:
        doc["outputs"] = {
            o.name: _present(
                (("value", o.value), ("type", o.type), ("sensitive", o.sensitive)), o.extra
            )
            for o in outputs
        }
    if "resources" not in omitted:
        doc["resources"] = _resources(instances)
    doc.update(extra)
    return doc


def _resources(instances: Iterable[InstanceRow]) -> list[dict[str, Any]]:
    resources: list[dict[str, Any]] = []
    current_index = None
    for row in instances:
        if row.resource_index != current_index:
            current_index = row.resource_index
            resource = _present(
                (
                    ("module", row.module_path),
                    ("mode", row.mode),
                    ("type", row.type),
                    ("name", row.name),
                    ("each", row.each),
                    ("provider", row.provider),
                ),
                row.resource_extra,
            )
            resource["instances"] = []
            resources.append(resource)
        resources[-1]["instances"].append(
            _present(((key, getattr(row, attr)) for key, attr in _INSTANCE_KEYS), row.extra)
        )
    return resources
