"""The caller, a mixin of the root Query (see app/api/schema.py)."""

import strawberry

from app.api.context import Info
from app.api.readers.types import Viewer, viewer_of


@strawberry.type
class ReadersQuery:
    @strawberry.field(
        description="The token of this request: its role, reach, and what "
        "it may do on a state (`on`)."
    )
    async def viewer(self, info: Info) -> Viewer:
        return viewer_of(info.context.principal)
