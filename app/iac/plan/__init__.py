"""The planner: a document, the IaC state and the live catalog in, a plan out (pure).

Design: docs/iac.md ("State", "Three-way diff", "Missing, orphaned, absent").

Each declared line is resolved to at most one live resource, in this order:
1. its own state row (same kind, same qualified ref) whose live resource exists;
2. a move: the row of `renamed_from`, or the row under the old ref of a renamed table;
3. adoption by natural identity, when nothing in state binds it: a table by name, a
   column by name in its table, a grant by principal, the table's client access, a
   public read by ref (by the slug export gives a ref no document can write), an
   insight selection by chatroom; kinds without a unique identity by their declared
   fields (a rule by expression, a view or command by name, null when left out, a
   trigger by all its declared fields). When several match (table names repeat), the
   first free one in creation order, so an export plans back as adoptions.
A live resource claimed by another system is never adopted: the plan is refused,
naming that system (hand-over = release there, then adopt here).

Every token a present line names (its table, a view's columns, a public read's view,
selected tables, a reference target, a record's reference by key) must resolve to
exactly one resource that is live after apply: a present line of the document, else a
live resource this system manages under that ref; never an orphaned row's dead ID or
the old ref of a move. Undeclared sub-resources of a renamed table follow it to the
new table ref (`follows`); a line claiming such a ref as another kind is refused.
Whatever plans cleanly applies cleanly.

Then, per field the declaration provides: desired vs last applied is intent, live vs
last applied is drift; a field is changed when desired differs from live. Fields the
declaration leaves out are not managed and never compared. Undeclared resources are
never touched; a state row whose live resource is gone is `orphaned` (cleaned up by
apply, and re-created when still declared). Records are `insert` unless a live record
has the same key values (`skip`); they are never updated.

The plan hash covers the canonical document, the state rows, the live resources the
plan read (fingerprints) and the resulting actions: apply replans and compares it.
"""

from app.iac.plan.model import (
    ACTIONS,
    KIND_ORDER,
    KIND_RANK,
    Action,
    Change,
    Live,
    Plan,
    PlanError,
    RecordStep,
    Step,
)
from app.iac.plan.planner import make_plan
from app.iac.plan.records import insert_order, record_tables, reference_targets

__all__ = [
    "ACTIONS",
    "KIND_ORDER",
    "KIND_RANK",
    "Action",
    "Change",
    "Live",
    "Plan",
    "PlanError",
    "RecordStep",
    "Step",
    "insert_order",
    "make_plan",
    "record_tables",
    "reference_targets",
]
