"""Naming a state's output readers, a mixin of the root Mutation (see app/api/schema.py)."""

import strawberry

from app.api.context import Info
from app.api.readers.types import OutputReaders, output_readers_of
from app.graph import readers
from app.readers import checked_readers


@strawberry.type
class ReadersMutation:
    @strawberry.mutation(
        description="Name who may read the outputs of `state` (replacing who was named): "
        "`tokens` by name, `states` as globs of consumer states. An admin, or a writer of "
        "the state; recorded as an output-readers event."
    )
    async def set_output_readers(
        self,
        info: Info,
        state: str,
        tokens: list[str] | None = None,
        states: list[str] | None = None,
    ) -> OutputReaders:
        named = checked_readers(tokens or [], states or [])
        saved = await info.context.with_conn(
            readers.set_readers, state, named, actor=info.context.actor
        )
        return output_readers_of(saved)
