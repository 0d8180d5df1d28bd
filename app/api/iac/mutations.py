"""The IaC mutations, a mixin of the root Mutation (see app/api/schema.py).

A scope argument is its slug; a document is the JSONL text. An invalid document is
BAD_INPUT with every problem in extensions.detail.errors ({line, kind, ref, message}).
"""

import strawberry

from app.api.context import Info
from app.api.iac.types import ApplyResult, Plan, ReleaseResult
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
        planned = await info.context.with_conn(
            service.plan,
            scope,
            _utf8(document),
            max_bytes=info.context.settings.max_document_bytes,
            secret_key=info.context.settings.secret_key,
        )
        return Plan.of(planned)

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
            secret_key=info.context.settings.secret_key,
            keep_last=info.context.settings.prune_keep_last,
        )
        return ApplyResult.of(applied)

    @strawberry.mutation(
        description="Hand-over: `system` stops managing the resources under `refs` (a table "
        "with its sub-resources). They stay live and unmanaged; another system may then adopt "
        "them. Recorded as an event and a new version of the state iac:{scope}/{system}."
    )
    async def release(self, info: Info, scope: str, system: str, refs: list[str]) -> ReleaseResult:
        released = await info.context.with_conn(
            service.release, scope, system, refs, actor=info.context.actor
        )
        return ReleaseResult.of(released)
