"""An IaC system's managed resources as a graph state version (pure).

Every apply is recorded as a version of the state `iac:{scope slug}/{system}` (kind
`iac`), so history, diff, events and blast radius work as for Terraform. The version
is written as a Terraform v4 document (what the state store keeps verbatim and serves
on GET): one resource per managed resource, type = its kind, name = its qualified ref,
attributes = last-applied spec plus IDs, `dependencies` = the resources it refers to.
The store then uses the qualified ref itself as the address (`contacts.email`, not
`column.contacts.email`).
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.iac.fields import redact
from app.iac.model import qualify
from app.iac.plan import Plan
from app.iac.state import StateRow
from app.jsonutil import dumps
from app.tfstate import NormalizedState, parse_state


def state_name(scope_slug: str, system: str) -> str:
    return f"iac:{scope_slug}/{system}"


def provider_of(system: str) -> str:
    return f'provider["infragraph/iac/{system}"]'


def _references(row: StateRow, table_refs: Mapping[str, str]) -> list[tuple[str, str]]:
    """(kind, qualified ref) of what a managed resource refers to."""
    spec = row.last_applied_spec
    table = table_refs.get(row.table_id or "")
    out: list[tuple[str, str]] = []
    if row.resource_type != "table" and table is not None:
        out.append(("table", table))
    if row.resource_type == "column":
        target = (spec.get("options") or {}).get("target")
        if isinstance(target, str):
            out.append(("table", target))
    elif row.resource_type == "view" and table is not None:
        out.extend(("column", qualify("column", c, table)) for c in spec.get("columns") or ())
    elif row.resource_type == "public_read" and table is not None and spec.get("view"):
        out.append(("view", qualify("view", spec["view"], table)))
    elif row.resource_type == "insight_selection":
        out.extend(("table", t) for t in spec.get("tables") or ())
    return out


def graph_state(
    rows: Iterable[StateRow], *, serial: int, lineage: str, system: str
) -> tuple[bytes, NormalizedState]:
    """The v4 body of a version, and its rows with qualified refs as addresses."""
    ordered: Sequence[StateRow] = sorted(rows, key=lambda r: (r.ref, r.resource_type))
    table_refs = {r.resource_id: r.ref for r in ordered if r.resource_type == "table"}
    present = {(r.resource_type, r.ref) for r in ordered}
    resources = []
    for row in ordered:
        depends = [
            f"{kind}.{ref}" for kind, ref in _references(row, table_refs) if (kind, ref) in present
        ]
        attributes: dict[str, Any] = {
            **redact(row.last_applied_spec),  # not even the keyed hashes of secrets
            "id": row.resource_id,
            "table_id": row.table_id,
        }
        instance: dict[str, Any] = {"schema_version": 0, "attributes": attributes}
        if depends:
            instance["dependencies"] = sorted(set(depends))
        resources.append(
            {
                "mode": "managed",
                "type": row.resource_type,
                "name": row.ref,
                "provider": provider_of(system),
                "instances": [instance],
            }
        )
    body = dumps(
        {"version": 4, "serial": serial, "lineage": lineage, "outputs": {}, "resources": resources},
        indent=True,
    )
    state = parse_state(body)
    state.instances = [
        instance._replace(address=row.ref)
        for instance, row in zip(state.instances, ordered, strict=True)
    ]
    return body, state


def planned_instances(plan: Plan, rows: Sequence[StateRow]) -> list[dict[str, Any]]:
    """The instances (address, type, provider, attributes) of the resources `plan`
    declares present, and of the undeclared ones that follow a renamed table, as an
    apply would write them to the system's graph state (see `graph_state`), as far as a
    plan knows them: a resource it creates has no ID yet (null)."""
    tables = {
        r.ref: r.resource_id for r in rows if r.system == plan.system and r.resource_type == "table"
    }
    tables.update({s.ref: s.live_id for s in plan.steps if s.kind == "table" and s.live_id})
    planned: list[tuple[str, str, Mapping[str, Any], str | None, str | None]] = [
        (ref, row.resource_type, row.last_applied_spec, row.resource_id, row.table_id)
        for row, ref in plan.follows
    ]
    for step in plan.steps:
        line = step.line
        if line is None or line.absent or step.action in ("delete", "orphaned"):
            continue
        table_id = step.live_id if step.kind == "table" else tables.get(line.table or "")
        planned.append((step.ref, step.kind, step.remembered, step.live_id, table_id))
    return [
        {
            "address": address,
            "type": kind,
            "provider": provider_of(plan.system),
            "attributes": {**redact(spec), "id": resource_id, "table_id": table_id},
        }
        for address, kind, spec, resource_id, table_id in planned
    ]
