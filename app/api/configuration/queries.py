"""The configuration graph's root query fields, a mixin of the root Query (see
app/api/schema.py)."""

import strawberry

from app.api.configuration.loaders import MAX_FIRST
from app.api.configuration.types import ModuleCall, module_of
from app.api.context import Info
from app.configuration import store


@strawberry.input(description="Which module calls: of a state, at a version constraint.")
class ModuleFilter:
    state: str | None = None
    version_constraint: str | None = None


_COUNTED = {"instances", "resourceCount", "keys"}  # the fields that read the states' resources


@strawberry.type
class ConfigurationQuery:
    @strawberry.field(
        description="Module calls across the states' latest configurations (those the "
        "caller may read), by state then key: of `source` "
        "(`terraform-aws-modules/vpc/aws`), within `filter`."
    )
    async def modules(
        self,
        info: Info,
        source: str | None = None,
        filter: ModuleFilter | None = None,
        first: int = 100,
    ) -> list[ModuleCall]:
        selected = {
            f.name for s in info.selected_fields for f in s.selections if hasattr(f, "name")
        }
        rows = await info.context.with_conn(
            store.find_modules,
            source=source,
            state=filter.state if filter else None,
            version_constraint=filter.version_constraint if filter else None,
            readable=info.context.principal.patterns,
            limit=max(0, min(first, MAX_FIRST)),
            under=bool(selected & _COUNTED),
        )
        return [module_of(r) for r in rows]
