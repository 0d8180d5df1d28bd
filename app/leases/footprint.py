"""A plan's footprint: what a lease taken from it may change (pure, no I/O)."""

from dataclasses import dataclass
from typing import Any

from app.leases.merge import OUTPUT_PREFIX
from app.plans.parse import Action, ParsedPlan

# What an instance change does that is no write of it
_NOT_WRITES = frozenset({Action.NO_OP, Action.READ})


@dataclass(frozen=True)
class Footprint:
    addresses: tuple[str, ...]  # instances created, updated, replaced, deleted or moved
    outputs: tuple[str, ...]  # outputs changed

    def keys(self) -> list[str]:
        """One key per instance and per output (`output.NAME`): the rows two live leases
        of a state never share."""
        return [*self.addresses, *(OUTPUT_PREFIX + name for name in self.outputs)]


def footprint(plan: ParsedPlan) -> Footprint:
    addresses: set[str] = set()
    for change in plan.changes:
        if change.action in _NOT_WRITES and not change.moved:
            continue
        address = change.address
        if change.deposed is not None:
            address = f"{address} (deposed object {change.deposed})"
        addresses.add(address)
        if change.moved and change.previous_address is not None:
            addresses.add(change.previous_address)  # a move writes where it leaves too
    outputs = {o.name for o in plan.output_changes if o.action is not Action.NO_OP}
    return Footprint(tuple(sorted(addresses)), tuple(sorted(outputs)))


def _resource_change(entry: Any) -> Any:
    """A resource change without its values (what a footprint reads); None for one that
    writes nothing (a no-op, not moved)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("change"), dict):
        return entry  # refused by the server, as the whole plan would be
    actions = entry["change"].get("actions")
    if actions == ["no-op"] and entry.get("previous_address") is None:
        return None
    return {
        **{k: v for k, v in entry.items() if k in _CHANGE_KEYS},
        "change": {"actions": actions},
    }


def _prior_module(module: Any) -> Any:
    """A prior state module's resources, each with its id alone (and whether it is
    sensitive): what a plan's staleness is judged by."""
    if not isinstance(module, dict):
        return module
    reduced: dict[str, Any] = {}
    if "resources" in module:
        reduced["resources"] = [_prior_resource(r) for r in _items(module["resources"])]
    if "child_modules" in module:
        reduced["child_modules"] = [_prior_module(m) for m in _items(module["child_modules"])]
    return reduced


def _prior_resource(resource: Any) -> Any:
    if not isinstance(resource, dict):
        return resource
    reduced = {k: v for k, v in resource.items() if k in ("address", "mode", "type", "name")}
    for key in ("values", "sensitive_values"):
        value = resource.get(key)
        if isinstance(value, dict) and "id" in value:
            reduced[key] = {"id": value["id"]}
    return reduced


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


_CHANGE_KEYS = frozenset(
    {"address", "previous_address", "mode", "type", "name", "provider_name", "deposed"}
)


def lease_plan(plan: Any) -> Any:
    """A plan's JSON (`terraform show -json`) reduced to what a lease reads of it: the
    resource changes that write (without their values), the outputs' actions, and the
    prior state's instances with their ids. A plan lists every instance with all its
    values (megabytes for thousands of instances): what the CLI sends is this."""
    if not isinstance(plan, dict):
        return plan
    reduced = {k: v for k, v in plan.items() if k in ("format_version", "terraform_version")}
    if "resource_changes" in plan:
        changes = [_resource_change(e) for e in _items(plan["resource_changes"])]
        reduced["resource_changes"] = [e for e in changes if e is not None]
    if "planned_values" in plan and "resource_changes" not in plan:
        reduced["planned_values"] = plan["planned_values"]
    outputs = plan.get("output_changes")
    if isinstance(outputs, dict):
        reduced["output_changes"] = {
            name: {"actions": change.get("actions")} if isinstance(change, dict) else change
            for name, change in outputs.items()
        }
    prior = plan.get("prior_state")
    if isinstance(prior, dict):
        values = prior.get("values")
        reduced["prior_state"] = {
            **{k: v for k, v in prior.items() if k != "values"},
            **(
                {"values": {"root_module": _prior_module(values.get("root_module"))}}
                if isinstance(values, dict) and "root_module" in values
                else {"values": values}
                if "values" in prior
                else {}
            ),
        }
    return reduced
