"""The IaC mutations, a mixin of the root Mutation (see app/api/schema.py).

A scope argument is its slug; a document is the JSONL text. An invalid document is
BAD_INPUT with every problem in extensions.detail.errors ({line, kind, ref, message}).
"""

import strawberry

from app.api.context import Info
from app.api.iac.types import ApplyResult, Plan
from app.iac import service


def _utf8(document: str) -> bytes:
    # A lone surrogate (legal in a JSON string) becomes bytes the parser rejects by line.
    return document.encode("utf-8", "surrogatepass")


@strawberry.type
class IacMutation:
    @strawberry.mutation(
        description="What applying the document to the scope would change; writes nothing."
    )
    async def plan(self, info: Info, scope: str, document: str) -> Plan:
        limit = info.context.settings.max_document_bytes
        return Plan.of(
            await info.context.with_conn(service.plan, scope, _utf8(document), max_bytes=limit)
        )

    @strawberry.mutation(
        description="Apply the document, if it still plans to `hash` (else STALE_PLAN), in one "
        "transaction, and record it as a new version of the state iac:{scope}/{system}."
    )
    async def apply(self, info: Info, scope: str, document: str, hash: str) -> ApplyResult:
        applied = await info.context.with_conn(
            service.apply,
            scope,
            _utf8(document),
            hash,
            actor=info.context.actor,
            max_bytes=info.context.settings.max_document_bytes,
        )
        return ApplyResult.of(applied)
