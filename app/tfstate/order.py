"""Where a version's instances go in its document, without storing positions per row.

Rows are shared between versions (app/graph/write/), so a row cannot hold its
position: adding one resource would move every row after it. Terraform writes
resources sorted by module, mode, type and name, and instances by index key;
a document in that order needs nothing stored to be rendered back. Any other
order is kept as a layout: the instance addresses of each resource, in order.
"""

from collections.abc import Iterable, Sequence
from typing import Any

from app.tfstate.parse import InstanceRow, InstanceShape

Layout = list[list[str]]


def _resource_key(row: InstanceShape) -> tuple[str, str, str, str]:
    return (row.module_path or "", row.mode, row.type, row.name)


def _instance_key(row: InstanceShape) -> tuple[int, Any, str]:
    key = row.index_key
    kind = 0 if key is None else 1 if isinstance(key, int) else 2
    return (kind, 0 if key is None else key, row.deposed or "")


def sort_key(row: InstanceShape) -> tuple[tuple[str, str, str, str], tuple[int, Any, str]]:
    return (_resource_key(row), _instance_key(row))


def layout_of(instances: Sequence[InstanceShape]) -> Layout | None:
    """None when the document is in sorted order (each resource once, its instances
    sorted), else the addresses of each resource's instances in document order."""
    previous: InstanceShape | None = None
    for row in instances:
        if previous is not None:
            new_resource = row.resource_index != previous.resource_index
            resource, last = _resource_key(row), _resource_key(previous)
            if not (resource > last if new_resource else resource == last) or (
                not new_resource and _instance_key(row) <= _instance_key(previous)
            ):
                return _explicit(instances)
        previous = row
    return None


def _explicit(instances: Iterable[InstanceShape]) -> Layout:
    layout: Layout = []
    current = None
    for row in instances:
        if row.resource_index != current:
            current = row.resource_index
            layout.append([])
        layout[-1].append(row.address)
    return layout


def in_document_order(rows: Iterable[InstanceRow], layout: Layout | None) -> list[InstanceRow]:
    """The rows of one version placed as its document had them (positions renumbered)."""
    if layout is None:
        ordered = sorted(rows, key=sort_key)
        placed: list[InstanceRow] = []
        resource_index, instance_index, last = -1, 0, None
        for row in ordered:
            key = _resource_key(row)
            if key != last:
                resource_index, instance_index, last = resource_index + 1, 0, key
            placed.append(
                row._replace(resource_index=resource_index, instance_index=instance_index)
            )
            instance_index += 1
        return placed
    by_address = {row.address: row for row in rows}
    return [
        by_address[address]._replace(resource_index=r, instance_index=i)
        for r, addresses in enumerate(layout)
        for i, address in enumerate(addresses)
    ]
