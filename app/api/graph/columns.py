"""A resource row as its page read it, and the choice of the columns a page reads.

A page of resources reads each row's ROW_COLUMNS (app/graph/resources.py). A blast
radius page leaves out the rest when its query does not show them, decoding them being
most of a page's cost: the JSON_COLUMNS (index key, sensitive paths) unless its
resources show them or their attributes, the attributes unless they are selected.
`blast_key` makes that choice from the query's selection (app/api/runtime/lookahead.py), before
any resolver runs.

Resource's fields read those columns through `ResourceRow.column`, the one place that
checks the page loaded them: a query the choice did not foresee is a bug, and its field
fails with UnloadedColumn (an internal error, logged) rather than answering null or
withholding every value. Only the attributes have a fallback: a field that asks for
them on a row read without loads them (Resource.attributes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import strawberry

from app.api.graph.loaders import Blast
from app.api.pagination import page_args
from app.api.runtime.lookahead import Selected, descend
from app.db import Row
from app.graph import across, edges
from app.graph.resources import Mode
from app.paging import Keyset

# A mode by its value: a dict look-up where Mode(value), an enum call, costs ten times more.
_MODES = {mode.value: mode for mode in Mode}


class UnloadedColumn(RuntimeError):
    """A field read a column its page did not load: `blast_key` did not foresee it."""


# Not frozen: a frozen dataclass's constructor costs three times as much, and a page
# builds one per resource.
@dataclass(slots=True)
class ResourceRow:
    """A resource row with the columns its page read (ROW_COLUMNS at least)."""

    record: Row

    def column(self, name: str) -> Any:
        """The column's value; UnloadedColumn if the page did not read it."""
        try:
            return self.record[name]
        except KeyError:
            raise UnloadedColumn(
                f"a Resource field read the column {name!r}, which its page did not load "
                "(app/api/graph/columns.py: blast_key chooses them from the query)"
            ) from None

    def has(self, name: str) -> bool:
        return name in self.record


class ResourceColumns:
    """Resource's fields read from its row: those of ROW_COLUMNS, which every page reads,
    and those of the columns a page may leave out.

    They are plain GraphQL fields (no resolver: app/api/runtime/execution.py reads them as
    attributes, a page of resources at a time). Resource declares them with `row_field`,
    which keeps them out of its constructor, so that these properties answer them: a page
    of a thousand resources reads the columns its query shows, not every one of them.
    """

    row: ResourceRow

    @property
    def address(self) -> str:
        return self.row.record["address"]  # type: ignore[no-any-return]

    @property
    def mode(self) -> Mode:
        return _MODES[self.row.record["mode"]]

    @property
    def type(self) -> str:
        return self.row.record["type"]  # type: ignore[no-any-return]

    @property
    def name(self) -> str:
        return self.row.record["name"]  # type: ignore[no-any-return]

    @property
    def provider(self) -> str:
        return self.row.record["provider"]  # type: ignore[no-any-return]

    @property
    def module(self) -> str | None:
        return self.row.record["module_path"]  # type: ignore[no-any-return]

    @property
    def each(self) -> str | None:
        return self.row.record["each"]  # type: ignore[no-any-return]

    @property
    def deposed(self) -> str | None:
        return self.row.record["deposed"]  # type: ignore[no-any-return]

    @property
    def status(self) -> str | None:
        return self.row.record["status"]  # type: ignore[no-any-return]

    @property
    def index_key(self) -> Any:
        return self.row.column("index_key")

    @property
    def sensitive_attributes(self) -> Any:
        return self.row.column("sensitive_attributes")


def row_field(description: str | None = None) -> Any:
    """A plain field of Resource answered by a ResourceColumns property: not an argument
    of its constructor, nor of its repr and equality (as Strawberry makes a field with a
    resolver), so no value set on the object hides the property."""
    declared = strawberry.field(description=description)
    declared.init = declared.repr = declared.compare = False
    return declared


# What a connection shows without its rows.
_ROWLESS = frozenset({"totalCount", "truncated", "beyondCount", "__typename"})
# The fields of a Resource read from resources.JSON_COLUMNS: a blast radius page whose
# resources show none of them reads its rows without (the attributes bring them too).
_JSON_FIELDS = frozenset({"indexKey", "sensitiveAttributes"})


def blast_keyset(cross_states: bool) -> Keyset:
    return across.CROSS_BLAST_KEY if cross_states else edges.BLAST_KEY


def _direction(value: Any) -> edges.Direction:
    """From a resolver (the enum), a literal (its name) or a variable (its value)."""
    if value is None or isinstance(value, edges.Direction):
        return value or edges.Direction.DEPENDENTS
    return (
        edges.Direction[value] if value in edges.Direction.__members__ else edges.Direction(value)
    )


def blast_key(arguments: Mapping[str, Any], selected: list[Selected]) -> Blast:
    """The page of a blast radius a field asks for: its arguments (GraphQL names, as
    `blast_arguments` gives them), and from its selection whether it wants rows at all
    and which of their columns. The prefetch of a list of resources and the field's own
    resolver both compute it, and find each other's page by it."""
    cross = bool(arguments.get("crossStates"))
    page = page_args(arguments.get("first"), arguments.get("after"), blast_keyset(cross))
    direction = _direction(arguments.get("direction"))
    shown = {field.name for field in descend(selected, ())}
    resource = {field.name for field in descend(selected, ("edges", "node", "resource"))}
    return Blast(
        direction,
        arguments.get("maxDepth"),
        page,
        rows=not shown <= _ROWLESS,
        json=not resource.isdisjoint(_JSON_FIELDS),
        attributes="attributes" in resource,
        cross_states=cross,
    )


def blast_arguments(
    direction: edges.Direction,
    max_depth: int | None,
    first: int | None,
    after: str | None,
    cross_states: bool,
) -> dict[str, Any]:
    """A blast radius's arguments by GraphQL name, as the prefetch keys them (the root
    field and Resource.blastRadius share one loader)."""
    return {
        "direction": direction,
        "maxDepth": max_depth,
        "first": first,
        "after": after,
        "crossStates": cross_states,
    }
