"""Resolution: which live resource each line is (its state row, a move, an adoption)."""

from collections.abc import Mapping, Sequence
from typing import Any, Final

from app.catalog.schema import REF
from app.iac.export import generated_ref
from app.iac.fields import same
from app.iac.model import Line, qualify
from app.iac.plan.base import PlanBase
from app.iac.state import StateRow

# Kinds whose live resources have no unique identity: an unmanaged one is adopted when
# these declared fields equal its own (all declared fields for a trigger), so that an
# exported document planned back into its scope adopts instead of duplicating.
_WEAK_IDENTITY: Final[dict[str, tuple[str, ...] | None]] = {
    "rule": ("expression",),
    "view": ("name",),
    "command": ("name",),
    "trigger": None,
}


def _identity_matches(line: Line, desired: Mapping[str, Any], candidate: Mapping[str, Any]) -> bool:
    match line.kind:
        case "table" | "column":
            named: bool = candidate["name"] == desired.get("name")
            return named
        case "grant":
            granted: bool = candidate["principal"] == line.ref
            return granted
        case "client_access":
            return True
        case "public_read":
            if REF.fullmatch(candidate["ref"]):
                same_ref: bool = candidate["ref"] == line.ref
                return same_ref
            # a live ref no document can write: export wrote its slug (+ _2, _3, ...)
            base = generated_ref("public_read", candidate)
            suffix = (line.ref or "").removeprefix(f"{base}_")
            return line.ref == base or (suffix != line.ref and suffix.isdigit())
        case "insight_selection":
            same_room: bool = candidate["chatroom"] == line.chatroom
            return same_room
    # an identity field left out matches a live null (an unnamed view adopts an unnamed one)
    names = _WEAK_IDENTITY[line.kind] or tuple(desired)
    return bool(names) and all(same(desired.get(n), candidate[n]) for n in names)


class Resolution(PlanBase):
    def _candidates(self, line: Line) -> list[Mapping[str, Any]]:
        if line.kind == "table":
            name = (line.spec or {}).get("name")
            # a None name is no key of the name-keyed index: no candidates, as the lookup gave
            return self.live.tables_by_name.get(name, []) if name is not None else []
        if line.kind in ("command", "insight_selection"):
            return self.live.commands_and_insights.get(line.kind, [])
        parent = self._table_id(line.table)
        return self.live.children.get((parent, line.kind), []) if parent else []

    def _adoptable(self, line: Line, desired: Mapping[str, Any]) -> Mapping[str, Any] | None:
        if line.kind == "table" and "name" not in (line.spec or {}):
            return None
        matches = [
            c
            for c in self._candidates(line)
            if c["id"] not in self.adopted and _identity_matches(line, desired, c)
        ]
        for candidate in matches:
            self.read[candidate["id"]] = candidate
        free = [c for c in matches if c["id"] not in self.claims]
        # Several may match (table names repeat; the weak kinds have no unique identity):
        # the first free one in creation order, so the n-th line of a name adopts the n-th
        # live resource of that name, as export wrote them.
        if free:
            self.adopted.add(free[0]["id"])
            return free[0]
        if line.kind in _WEAK_IDENTITY:
            return None
        for candidate in matches:
            holder = self.claims.get(candidate["id"])
            if holder is None:
                continue
            if holder.system != self.system:
                self._error(
                    line,
                    f"the live {line.kind} {candidate['id']} is managed by system "
                    f"{holder.system!r} as {holder.ref}; release it there before adopting it",
                    claim=True,
                )
                return None
            # a table name may repeat, and one a line of this document declares is its own
            # (under its new name, if it changes): creating another is no rename
            if line.kind != "table" and holder.ref not in self.declared:
                self._error(
                    line,
                    f"the live {line.kind} it names is already bound to {holder.ref} by this "
                    f"system; to rename, declare renamed_from: {holder.ref!r}",
                )
                return None
        return None

    def _moved_row(self, line: Line) -> tuple[str | None, StateRow | None]:
        """The old qualified ref and its row when the line, its table or both were
        renamed (a column renamed in a renamed table was `{old table}.{old ref}`)."""
        old_table = self.moved_tables.get(line.table or "")
        candidates = [line.previous_qualified_ref]
        if old_table is not None:
            candidates.append(qualify(line.kind, line.renamed_from or line.ref, old_table))
        for old in candidates:
            if old is not None and (row := self._row(line.kind, old)) is not None:
                return old, row
        return None, None

    def _resolve(
        self, line: Line, desired: Mapping[str, Any]
    ) -> tuple[str, StateRow | None, Mapping[str, Any] | None, str]:
        """(how, row, live resource, reason); how is bound, moved, orphaned, adopted or new."""
        row = self._row(line.kind, line.qualified_ref)
        other = self.state.get(line.qualified_ref)
        if row is None and other is not None and other.resource_type != line.kind:
            self._error(
                line,
                f"{line.qualified_ref} is bound to a {other.resource_type} in state; a ref "
                f"cannot change kind (declare it absent under another ref or release it)",
            )
        if row is not None:
            self.used_rows.add(row.key)
            found = self._look(line.kind, row.resource_id)
            if found is not None:
                return "bound", row, found, ""
            return "orphaned", row, None, "its live resource is gone"
        old, old_row = self._moved_row(line)
        if old_row is not None:
            self.used_rows.add(old_row.key)
            found = self._look(line.kind, old_row.resource_id)
            if found is not None:
                return "moved", old_row, found, f"renamed from {old}"
            return "orphaned", old_row, None, "its live resource is gone"
        adopted = self._adoptable(line, desired)
        if adopted is not None:
            return "adopted", None, adopted, "unmanaged live resource with the same identity"
        return "new", None, None, ""

    def _prebind(self, line: Line) -> None:
        """Bind a line's live ID from state only (no errors, no adoption): a first pass."""
        row = self._row(line.kind, line.qualified_ref) or self._moved_row(line)[1]
        found = self.live.get(line.kind, row.resource_id) if row else None
        if found is not None:
            self._remember(line, found["id"])

    def _follow_renamed_tables(self, lines: Sequence[Line]) -> None:
        """The refs a move frees, and the undeclared sub-resources of a renamed table that
        follow it to the new table ref (apply rewrites their rows). A line claiming such a
        new ref as another kind would make two resources answer to one token: refused."""
        resolved = set()
        for line in lines:
            if (row := self._row(line.kind, line.qualified_ref)) is not None:
                resolved.add(row.key)
            old, moved = self._moved_row(line)
            if old is not None and moved is not None:
                resolved.add(moved.key)
                self.moved_away.add(old)
        for new_table, old_table in self.moved_tables.items():
            table_row = self._row("table", old_table)
            if table_row is None or self.live.get("table", table_row.resource_id) is None:
                continue
            old_prefix = f"{old_table}."
            for row in self.state.values():
                if row.table_id != table_row.resource_id or not row.ref.startswith(old_prefix):
                    continue
                self.moved_away.add(row.ref)
                if row.key in resolved or self.live.get(row.resource_type, row.resource_id) is None:
                    continue
                new = f"{new_table}.{row.ref.removeprefix(old_prefix)}"
                self.followed[new] = row
                self.used_rows.add(row.key)
                if (clash := self.declared.get(new)) is not None:
                    self._error(
                        clash,
                        f"{new} is also the new ref of the {row.resource_type} {row.ref}, "
                        f"which follows its table renamed to {new_table}; declare that "
                        f"{row.resource_type} under another ref (renamed_from) or absent, "
                        f"or use another ref here",
                    )
