"""What a write did to a state's instance rows: the result its edges, links and lineage
(app/graph/links.py), its event and its policy checks are written from."""

from dataclasses import dataclass
from uuid import UUID

from app.tfstate import InstanceRow, NormalizedState, ScannedState
from app.tfstate.parse import InstanceShape


@dataclass(frozen=True)
class WrittenRows:
    """The new version's instances against the current version's rows (by address)."""

    state_id: UUID
    serial: int  # the new version's
    state: NormalizedState | ScannedState  # as written: lineage reads its instances again
    refs: list[InstanceShape]  # every instance in document order
    row_ids: list[UUID]  # the row of each: kept, or inserted
    new: list[int]  # positions of the inserted rows
    changed: int  # of those, the ones replacing a row at their address
    closed: dict[UUID, str]  # the rows closed (removed or replaced), their addresses
    remote: dict[int, InstanceRow]  # inserted data sources by position, as parsed (links)
    holds_output_value: bool  # an inserted row holds an output's value (lineage)
    # each closed row's new row at its address, when every new row replaces the closed
    # row at its address and names what it named: the edges are then the same
    successors: dict[UUID, UUID] | None

    @property
    def inserted(self) -> list[UUID]:
        """The ids of the rows inserted (added or changed)."""
        return [self.row_ids[position] for position in self.new]

    def summary(self) -> dict[str, int]:
        """Instances added, changed and removed (by address)."""
        added = len(self.new) - self.changed
        return {"added": added, "changed": self.changed, "removed": len(self.closed) - self.changed}
