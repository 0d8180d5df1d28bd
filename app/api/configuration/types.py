"""The configuration graph's types: module calls, configuration versions, the reasons of
edges; and the mixins that add them to State and Resource."""

from __future__ import annotations

import enum
import json
import re
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any
from uuid import UUID

import strawberry
from strawberry.scalars import JSON

from app.api.configuration.loaders import MAX_FIRST
from app.api.context import Info
from app.db import Row

if TYPE_CHECKING:
    from app.api.graph.resource import Resource
    from app.api.graph.version import StateVersion

_LAST_KEY = re.compile(r'\[("(?:[^"\\]|\\.)*"|[0-9]+)\]$')


@strawberry.enum(description="Why a resource depends on another.")
class ReferenceReason(enum.Enum):
    EXPLICIT = "explicit"  # depends_on
    IMPLICIT = "implicit"  # an argument's expression references it
    DECLARED = "declared"  # only the state's dependencies say so (no configuration knows)


@strawberry.type(description="A module call of a state's latest configuration.")
class ModuleCall:
    state: str = strawberry.field(description="The state's name.")
    key: str = strawberry.field(
        description="Its path without instance keys: `module.net.module.subnets`."
    )
    name: str
    parent: str = strawberry.field(description="The calling module's key; '' the root module.")
    source: str
    version_constraint: str | None
    expansion: str | None = strawberry.field(description='"count", "for_each" or null.')
    instances: list[str] = strawberry.field(
        description="Its module instances in the state's current version, by address."
    )
    resource_count: int = strawberry.field(
        description="The resource instances directly under it in the current version."
    )

    @strawberry.field(description="The instance keys (count indexes, for_each keys).")
    def keys(self) -> list[JSON]:
        found: list[JSON] = []
        for instance in self.instances:
            if match := _LAST_KEY.search(instance):
                key = match.group(1)
                found.append(json.loads(key))
        return found


def module_of(r: Row) -> ModuleCall:
    return ModuleCall(
        state=r["state_name"],
        key=r["key"],
        name=r["name"],
        parent=r["parent"],
        source=r["source"],
        version_constraint=r["version_constraint"],
        expansion=r["expansion"],
        instances=list(r["instances"] or []),
        resource_count=r["resources"],
    )


@strawberry.type(description="A module's variable: its name only, never its value.")
class ConfigurationVariable:
    module: str
    name: str
    sensitive: bool


@strawberry.type(description="A provider configuration: names and references, no value.")
class ConfigurationProvider:
    key: str
    name: str
    full_name: str | None
    alias: str | None
    module: str
    version_constraint: str | None
    references: JSON = strawberry.field(
        description="Each argument's references (addresses): {argument: [address]}."
    )


@strawberry.type(
    description="A version of a state's configuration, from a plan or `config push`: "
    "kept when its content differs from the state's latest."
)
class ConfigurationVersion:
    number: int
    hash: str = strawberry.field(description="SHA-256 of what is kept of it.")
    origin: str = strawberry.field(description='"plan" or "push".')
    submitter: str
    base_serial: int | None = strawberry.field(
        description="The state's current serial when it was recorded."
    )
    terraform_version: str | None
    created_at: datetime
    config_id: strawberry.Private[UUID]
    document: strawberry.Private[Any]

    @strawberry.field
    def variables(self) -> list[ConfigurationVariable]:
        return [ConfigurationVariable(**v) for v in (self.document or {}).get("variables", [])]

    @strawberry.field
    def providers(self) -> list[ConfigurationProvider]:
        return [ConfigurationProvider(**p) for p in (self.document or {}).get("providers", [])]


def configuration_of(r: Row) -> ConfigurationVersion:
    return ConfigurationVersion(
        number=r["number"],
        hash=r["hash"],
        origin=r["origin"],
        submitter=r["submitter"],
        base_serial=r["base_serial"],
        terraform_version=r["terraform_version"],
        created_at=r["created_at"],
        config_id=r["id"],
        document=r.get("document"),
    )


@strawberry.type(description="A dependency edge and why it is there.")
class ResourceReference:
    reason: ReferenceReason
    attributes: list[str] = strawberry.field(
        description="The arguments whose expressions reference it (IMPLICIT): `subnet_id`, "
        "`ingress.cidr_blocks`, `count`."
    )
    direct: bool = strawberry.field(
        description="Whether the blast radius follows it (a reference, or an edge no "
        "other path implies)."
    )
    resource_id: strawberry.Private[UUID]
    version_id: strawberry.Private[UUID]

    @strawberry.field(description="The resource at the other end, at the same version.")
    async def resource(
        self, info: Info
    ) -> Annotated[Resource, strawberry.lazy("app.api.graph.resource")] | None:
        from app.api.graph import rows  # the graph's types import this module

        record = await info.context.graph.resource.load((self.resource_id, self.version_id))
        return rows.resource_of(record) if record is not None else None


def _references(records: list[Row], version_id: UUID) -> list[ResourceReference]:
    return [
        ResourceReference(
            reason=ReferenceReason(r["reason"]),
            attributes=list(r["attributes"]),
            direct=r["direct"],
            resource_id=r["id"],
            version_id=version_id,
        )
        for r in records
    ]


def _first(first: int) -> int:
    return max(0, min(first, MAX_FIRST))


@strawberry.type
class StateConfiguration:
    """A mixin of State: its configuration and module calls."""

    state_id: strawberry.Private[UUID]

    @strawberry.field(
        description="The module calls of its latest configuration, by key (none known: empty)."
    )
    async def modules(self, info: Info) -> list[ModuleCall]:
        found = await info.context.configuration.modules.load(self.state_id)
        return [module_of(r) for r in found]

    @strawberry.field(description="Its configuration versions, newest first.")
    async def configurations(self, info: Info, first: int = 20) -> list[ConfigurationVersion]:
        found = await info.context.configuration.versions(_first(first)).load(self.state_id)
        return [configuration_of(r) for r in found]


@strawberry.type
class ResourceReferences:
    """A mixin of Resource: its dependency edges with their reasons."""

    resource_id: strawberry.Private[UUID]
    if TYPE_CHECKING:
        version: StateVersion

    @strawberry.field(
        description="What it depends on, by address, and why: EXPLICIT (depends_on), "
        "IMPLICIT (with the arguments that reference it), DECLARED (the state's "
        "dependencies only; no configuration known, or none explains it)."
    )
    async def references(self, info: Info, first: int = 100) -> list[ResourceReference]:
        loader = info.context.configuration.references(False, _first(first))
        version_id = self.version.version_id
        return _references(await loader.load((self.resource_id, version_id)), version_id)

    @strawberry.field(description="What depends on it, by address, and why (as `references`).")
    async def referenced_by(self, info: Info, first: int = 100) -> list[ResourceReference]:
        loader = info.context.configuration.references(True, _first(first))
        version_id = self.version.version_id
        return _references(await loader.load((self.resource_id, version_id)), version_id)
