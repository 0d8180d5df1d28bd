"""The graph's GraphQL objects built from the rows the graph module read.

Scalar fields are plain attributes filled from one row (no resolver per field); a
Resource keeps its row for the columns a page may leave out (columns.py). The node types
and this module import one another as modules (see refs.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from uuid import UUID

from app.api.graph import blast, event, links, resource, state, version
from app.api.graph.columns import ResourceRow
from app.api.graph.inputs import StateKind
from app.api.pagination import connection
from app.db import Row
from app.graph import edges
from app.paging import Page


def state_of(r: Row) -> state.State:
    return state.State(
        id=str(r["state_id"]),
        state_id=r["state_id"],
        name=r["state_name"],
        kind=StateKind(r["state_kind"]),
        lineage=r["state_lineage"],
        created_at=r["state_created_at"],
    )


def lock_of(r: Row) -> state.Lock:
    return state.Lock(
        id=r["lock_id"],
        holder=r["holder"],
        who=r["who"],
        operation=r["operation"],
        created=r["created_at"],
        info=r["info"],
    )


def version_of(r: Row, owner: state.State | None = None) -> version.StateVersion:
    """A version of its row, of the state `owner` (else of the row's state columns)."""
    return version.StateVersion(
        id=str(r["version_id"]),
        version_id=r["version_id"],
        serial=r["serial"],
        lineage=r["version_lineage"],
        terraform_version=r["terraform_version"],
        created_at=r["version_created_at"],
        created_by=r["version_created_by"],
        encrypted=r["version_encrypted"],
        state=owner or state_of(r),
    )


def output_of(r: Row, of: version.StateVersion) -> version.Output:
    return version.Output(
        name=r["name"],
        value=r["value"],
        type=r["type"],
        sensitive=r["sensitive"],
        state_id=of.state.state_id,
        version_id=of.version_id,
    )


def event_of(r: Row) -> event.Event:
    return event.Event(
        id=str(r["id"]),
        state_name=r["state_name"],
        action=r["action"],
        actor=r["actor"],
        serial=r["serial"],
        detail=r["detail"],
        created_at=r["created_at"],
    )


def resource_of(record: Row) -> resource.Resource:
    return resources_of([record])[0]


def resources_of(
    records: Iterable[Row], at: version.StateVersion | None = None
) -> list[resource.Resource]:
    """Resources of rows with RESOURCE_COLUMNS; rows of one version share its objects.
    With `at`: rows with ROW_COLUMNS (and maybe JSON_COLUMNS and attributes: the columns
    a blast radius page chose, see columns.py), all at that version. A resource's row
    answers its other fields (columns.ResourceColumns)."""
    # a version and the end of its resources' ids, by version id
    versions: dict[UUID, tuple[version.StateVersion, str]] = {}
    if at is not None:
        versions[at.version_id] = (at, f":{at.version_id}")
    built = []
    for r in records:
        version_id = at.version_id if at is not None else r["version_id"]
        found = versions.get(version_id)
        if found is None:
            of = version_of(r)
            found = versions[version_id] = (of, f":{of.version_id}")
        of, suffix = found
        row_id = r["id"]
        built.append(
            resource.Resource(
                id=str(row_id) + suffix,
                resource_id=row_id,
                row=ResourceRow(r),
                state=of.state,
                version=of,
            )
        )
    return built


def blast_connection(
    page: Page[Any], after: str | None, at: version.StateVersion | None
) -> blast.BlastRadiusConnection:
    """A page of a blast radius whose root is at version `at` (its rows are too, their
    paths as the walk encoded them); `at` None: across states (rows carry their versions,
    paths and path states)."""
    nodes = []
    for r, found in zip(page.rows, resources_of(page.rows, at), strict=True):
        if at is None:
            path, path_states = r["path"], r["path_states"]
        else:
            path = edges.path_addresses(r["path"])
            path_states = [at.state.name] * len(path)
        nodes.append(
            blast.BlastRadiusNode(
                resource=found, depth=r["depth"], path=path, path_states=path_states
            )
        )
    page_of = connection(page, nodes, after=after)
    return blast.BlastRadiusConnection(
        edges=page_of.edges, page_info=page_of.page_info, total=page_of.total, beyond=page.beyond
    )


def _link_outputs(
    outputs: list[dict[str, Any]], *, changed_only: bool = False
) -> list[links.LinkOutput]:
    return [
        links.LinkOutput(
            name=o["name"],
            read=o["read"],
            current=o["current"],
            present=o["present"],
            sensitive=o["sensitive"],
            changed=o["changed"],
            since=o["since"],
        )
        for o in outputs
        if o["changed"] or not changed_only
    ]


def link_of(r: Row, *, changed_only: bool = False) -> links.StateLink:
    return links.StateLink(
        address=r["address"],
        outputs=_link_outputs(r["outputs"], changed_only=changed_only),
        stale=r["stale"],
        since=r["since"],
        consumer=_linked_state(r, "consumer"),
        producer=_linked_state(r, "producer"),
    )


def _linked_state(r: Row, role: str) -> state.State:
    """The consumer's or the producer's State, from a link's row (app/graph/links.py)."""
    return state.State(
        id=str(r[f"{role}_id"]),
        state_id=r[f"{role}_id"],
        name=r[f"{role}_name"],
        kind=StateKind(r[f"{role}_kind"]),
        lineage=r[f"{role}_lineage"],
        created_at=r[f"{role}_created_at"],
    )
