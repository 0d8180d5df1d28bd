"""The plan hash: the canonical document, the state rows, the live resources the plan
read (fingerprints) and the resulting actions; apply replans and compares it."""

import dataclasses
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.iac.exactjson import canonical
from app.iac.model import Document, Line
from app.iac.plan.model import Action
from app.iac.state import StateRow


def plan_hash(
    doc: Document,
    claims: Iterable[StateRow],
    read: Mapping[str, Mapping[str, Any]],
    actions: Sequence[Action],
) -> str:
    digest = hashlib.sha256()
    for part in (
        [doc.system, doc.version],
        [_line_key(line) for line in doc.lines],
        [[r.line, r.table, r.key, r.values] for r in doc.records],
        sorted(
            [r.system, r.resource_type, r.ref, r.resource_id, r.table_id, r.last_applied_spec]
            for r in claims
        ),
        [_fingerprint(read[i]) for i in sorted(read)],
        [
            [a.action, a.kind, a.ref, a.reason, [dataclasses.astuple(c) for c in a.changes]]
            for a in actions
        ],
    ):
        digest.update(canonical(part))
        digest.update(b"\n")
    return digest.hexdigest()


def _line_key(line: Line) -> list[Any]:
    return [
        line.line,
        line.kind,
        line.qualified_ref,
        line.state,
        line.spec,
        line.renamed_from,
        line.chatroom,
        list(line.tables or ()),
        line.view,
    ]


def _fingerprint(resource: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in resource.items() if k != "created_at"}
