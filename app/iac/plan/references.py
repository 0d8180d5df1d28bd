"""Reference checks: every token a present line names resolves to one live-after-apply
resource."""

from app.iac.model import Line, qualify
from app.iac.plan.base import PlanBase


class References(PlanBase):
    def _references(self, line: Line) -> list[tuple[str, str]]:
        """(kind, qualified ref) of every resource a present line names: its table, the
        tables it selects, a reference column's target, a view's columns, a public read's
        view."""
        spec = line.spec or {}
        options = spec.get("options") if line.kind == "column" else None
        target = options.get("target") if isinstance(options, dict) else None
        out = [("table", t) for t in (line.table, *(line.tables or ()), target) if t]
        if line.kind == "view" and isinstance(spec.get("columns"), list):
            out += [("column", qualify("column", c, line.table)) for c in spec["columns"]]
        if line.kind == "public_read" and line.view is not None:
            out.append(("view", qualify("view", line.view, line.table)))
        return out

    def _check_references(self, line: Line) -> None:
        """Every token of a present line resolves to exactly one resource that will be
        live after apply: a present line of this document, else a live resource this
        system manages under that ref (never an orphaned row's dead ID, never the old
        ref of a move). The document checked the lines it declares (kind, absent)."""
        for kind, ref in self._references(line):
            follower = self.followed.get(ref)
            if ref in self.declared or (follower is not None and follower.resource_type == kind):
                continue
            row = self._row(kind, ref)
            if row is None or ref in self.moved_away:
                problem = "is neither declared in this document nor managed by system"
                self._error(line, f"{kind} {ref} {problem} {self.system!r}")
            elif self.live.get(kind, row.resource_id) is None:
                self._error(
                    line,
                    f"{kind} {ref} is managed by system {self.system!r} but its live "
                    f"resource {row.resource_id} is gone (declare it to re-create it)",
                )
