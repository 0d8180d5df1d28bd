"""The catalog's root query fields, a mixin of the root Query (see app/api/schema.py)."""

import strawberry

from app.api.catalog.types import Scope, build, build_all
from app.api.context import Info
from app.catalog import scopes
from app.errors import NotFound


@strawberry.type
class CatalogQuery:
    @strawberry.field(description="Every scope the token touches, oldest first.")
    async def scopes(self, info: Info) -> list[Scope]:
        found = await info.context.with_conn(scopes.list_scopes)
        touched = info.context.principal.may_touch_scope
        return build_all(Scope, [s for s in found if touched(s["slug"])])

    @strawberry.field(
        description="A scope by its slug; null when there is none (or the token does not touch it)."
    )
    async def scope(self, info: Info, slug: str) -> Scope | None:
        if not info.context.principal.may_touch_scope(slug):
            return None
        try:
            return build(Scope, await info.context.with_conn(scopes.scope_by_slug, slug))
        except NotFound:
            return None
