"""The catalog's root query fields, a mixin of the root Query (see app/api/schema.py)."""

import strawberry

from app.api.catalog.types import Scope, build, build_all
from app.api.context import Info
from app.catalog import scopes
from app.errors import NotFound


@strawberry.type
class CatalogQuery:
    @strawberry.field(description="Every scope, oldest first.")
    async def scopes(self, info: Info) -> list[Scope]:
        return build_all(Scope, await info.context.with_conn(scopes.list_scopes))

    @strawberry.field(description="A scope by its slug; null when there is none.")
    async def scope(self, info: Info, slug: str) -> Scope | None:
        try:
            return build(Scope, await info.context.with_conn(scopes.scope_by_slug, slug))
        except NotFound:
            return None
