"""Keyset pages: one statement gives each owner its page and its total count.

An "owner" is what a list hangs off (a state for its versions, a resource for
its dependents, a root for its blast radius; a constant for a top-level list).
Batching many owners into one statement keeps the number of statements of a
GraphQL query independent of the number of items it returns.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

R = TypeVar("R")

# The owner of a top-level list: everything belongs to one page.
ALL = 0


@dataclass(frozen=True)
class Keyset:
    """The columns a list is ordered by (unique together) and their Python types.

    A cursor is the key of the last row seen; the API decodes untrusted cursors
    against `types` before a function here compares rows with them.
    """

    columns: tuple[str, ...]
    types: tuple[type, ...]

    def key(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(map(row.__getitem__, self.columns))  # a page computes a thousand


@dataclass(frozen=True)
class Page(Generic[R]):
    rows: list[R]
    keys: list[tuple[Any, ...]]  # the cursor key of each row
    total: int | None  # all the items of the list, not only this page (None: not counted)
    has_next: bool
    # items past a limit the list was asked with (a blast radius' maxDepth): not in total
    beyond: int = 0


EMPTY: Page[Any] = Page([], [], 0, False)


def paged_sql(
    matched: str,
    *,
    order: str,
    after: str,
    limit: str,
    select: str,
    joins: str,
    owner: str | None = None,
    count: bool = True,
) -> str:
    """Page each owner of `matched` (a SELECT with an `owner` column).

    Rows come back per owner in `order`, only those passing `after` (the
    cursor condition, `true` without one), at most `limit` of them; every
    row carries its owner's total. An owner whose page is empty still gets
    one row (`page_owner`, `total`, NULLs), so totals survive the last page.

    With one owner (`owner`: its SQL value) the page is a top-N sort instead
    of a numbering of every row; there `count=False` skips the total (NULL)
    and its pass over every row, and the owner always gets its row.
    """
    if owner is None:
        # One pass of window functions, no join of totals to pages: the row counts of
        # `matched` are hard to estimate (ranges of serials), and a join planned for a
        # few rows became a nested loop over every pair of owners' rows.
        return f"""
        WITH m AS ({matched}),
        w AS (SELECT m.*, ({after}) AS passes,
                     count(*) OVER (PARTITION BY owner) AS total,
                     row_number() OVER (PARTITION BY owner, ({after}) ORDER BY {order}) AS page_rn,
                     row_number() OVER (PARTITION BY owner ORDER BY {order}) AS owner_rn
              FROM m),
        p AS (SELECT w.*, CASE WHEN passes AND page_rn <= {limit} THEN page_rn END AS rn
              FROM w WHERE (passes AND page_rn <= {limit}) OR owner_rn = 1)
        SELECT p.owner AS page_owner, p.total, p.rn, {select}
        FROM p
        {joins}
        ORDER BY p.owner, p.rn"""
    total = "count(*) AS total FROM m HAVING count(*) > 0" if count else "NULL::bigint AS total"
    return f"""
        WITH m AS ({matched}),
        t AS (SELECT {total}),
        p AS (SELECT m.*, row_number() OVER (ORDER BY {order}) AS rn
              FROM (SELECT * FROM m WHERE {after} ORDER BY {order} LIMIT {limit}) m)
        SELECT {owner} AS page_owner, t.total, p.rn, {select}
        FROM t LEFT JOIN p ON true
        {joins}
        ORDER BY p.rn"""


def pages_by_owner(records: Iterable[Any], first: int, keyset: Keyset) -> dict[Any, Page[Any]]:
    """Group the rows of a `paged_sql` statement (which fetched `first + 1` per owner)."""
    grouped: dict[Any, tuple[int, list[Any]]] = {}
    for record in records:
        total, rows = grouped.setdefault(record["page_owner"], (record["total"], []))
        if record["rn"] is not None:
            rows.append(record)
    pages: dict[Any, Page[Any]] = {}
    for owner, (total, rows) in grouped.items():
        shown = rows[:first]
        pages[owner] = Page(shown, [keyset.key(r) for r in shown], total, len(rows) > first)
    return pages


def single_page(records: Iterable[Any], first: int, keyset: Keyset) -> Page[Any]:
    """The page of a top-level list (owner `ALL`)."""
    return pages_by_owner(records, first, keyset).get(ALL, EMPTY)
