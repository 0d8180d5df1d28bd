"""What a parsed IaC document is (pure): its lines, records and errors, and the
qualified refs that name resources (iac.md, "Qualified refs and unique claims")."""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

RESOURCE_KINDS: Final = (
    *("table", "column", "rule", "trigger", "view", "grant", "client_access"),
    *("command", "insight_selection", "public_read"),
)
# Kinds sharing the per-table `{table}.{ref}` space (grant's `grant:` form cannot collide).
TABLE_SPACE_KINDS: Final = frozenset(
    {"column", "rule", "trigger", "view", "public_read", "client_access"}
)


@dataclass(frozen=True, slots=True)
class LineError:
    """One problem, located: line 0 means the whole document."""

    line: int
    kind: str | None
    ref: str | None
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "document"
        label = " ".join(part for part in (self.kind, self.ref) if part)
        return f"{where} ({label}): {self.message}" if label else f"{where}: {self.message}"


class DocumentError(ValueError):
    """The document is invalid; `errors` lists every problem, ordered by line."""

    def __init__(self, errors: Iterable[LineError]) -> None:
        self.errors: list[LineError] = sorted(errors, key=lambda e: e.line)
        shown = [str(e) for e in self.errors[:50]]
        if len(self.errors) > len(shown):
            shown.append(f"... and {len(self.errors) - len(shown)} more")
        count = len(self.errors)
        super().__init__(f"{count} error{'s' * (count != 1)} in document:\n" + "\n".join(shown))

    def as_dicts(self) -> list[dict[str, Any]]:
        """The errors as JSON-ready objects, for the API layers."""
        return [
            {"line": e.line, "kind": e.kind, "ref": e.ref, "message": e.message}
            for e in self.errors
        ]


def qualify(kind: str, ref: str | None, table: str | None = None) -> str:
    """The qualified ref of a resource, built from its parts (never split back)."""
    match kind:
        case "table":
            return f"{ref}"
        case "command":
            return f"command:{ref}"
        case "insight_selection":
            return f"insight.{ref}"
        case "client_access":
            return f"{table}.client_access"
        case "grant":
            return f"{table}.grant:{ref}"
        case "column" | "rule" | "trigger" | "view" | "public_read":
            return f"{table}.{ref}"
    raise ValueError(f"not a resource kind: {kind!r}")


@dataclass(frozen=True, slots=True)
class Line:
    """One resource declaration; `table` is the parent table ref (None for scope kinds)."""

    line: int
    kind: str
    ref: str | None
    qualified_ref: str
    table: str | None = None
    state: str = "present"
    spec: dict[str, Any] | None = None
    renamed_from: str | None = None
    chatroom: str | None = None
    tables: tuple[str, ...] | None = None
    view: str | None = None

    @property
    def absent(self) -> bool:
        return self.state == "absent"

    @property
    def previous_qualified_ref(self) -> str | None:
        """The qualified ref this line moves from (`renamed_from`), if any."""
        return qualify(self.kind, self.renamed_from, self.table) if self.renamed_from else None


@dataclass(frozen=True, slots=True)
class RecordLine:
    """A row to insert when its key is not found; `values` includes the key fields."""

    line: int
    table: str
    key: dict[str, Any]
    values: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Document:
    """A valid document: resource lines and records in document order."""

    system: str
    version: int
    lines: tuple[Line, ...]
    records: tuple[RecordLine, ...]
    undeclared_tables: tuple[str, ...] = ()
