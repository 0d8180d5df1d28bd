"""A plan's footprint: what a lease taken from it may change (pure, no I/O)."""

from dataclasses import dataclass

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
