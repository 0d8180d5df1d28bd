"""The catalog's GraphQL types and inputs, built from the domain's plain dicts.

IDs are the server's resource IDs as IaC state shows them (a table's UUID, a
column's "{table uuid}:{key}"), not Relay global IDs: the same strings travel
inside JSON inputs (a reference column's options.table, a reference value).
Lists hanging off a scope or a table load through the per-request loaders.
"""

import dataclasses
import enum
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

import strawberry
from strawberry.scalars import JSON

from app.api.context import Info
from app.api.pagination import DEFAULT_FIRST, AfterArg, Connection, FirstArg, connection, page_args
from app.catalog import kinds
from app.catalog.records import RECORD_KEY

T = TypeVar("T")


# The domain's enums, registered with Strawberry in place (the call form returns the same
# class, which the annotations name directly so that type checkers see a class).
ColumnType = kinds.ColumnType
Severity = kinds.Severity
TriggerEvent = kinds.TriggerEvent
Permission = kinds.Permission
strawberry.enum(ColumnType, description="What a column's values are.")
strawberry.enum(Severity, description="How much a broken rule matters.")
strawberry.enum(TriggerEvent, description="The record event a trigger runs on.")
strawberry.enum(Permission, description="What a grant allows.")


def build(cls: type[T], row: Mapping[str, Any]) -> T:
    """An object of `cls` from a domain dict (its plain fields, by name)."""
    return cls(**{f.name: row[f.name] for f in dataclasses.fields(cls) if f.init})  # type: ignore[arg-type]


def build_all(cls: type[T], rows: Iterable[Mapping[str, Any]]) -> list[T]:
    return [build(cls, row) for row in rows]


def builder(cls: type[T]) -> Callable[[Mapping[str, Any]], T]:
    """How a `cls` is made from a domain dict: its own `of` where some of its fields
    are named apart from the dict's (View, PublicRead, InsightSelection), else `build`."""
    return getattr(cls, "of", None) or partial(build, cls)


async def _children(info: Info, kind: str, parent_id: str, cls: type[T]) -> list[T]:
    return list(map(builder(cls), await info.context.catalog.children.load((kind, parent_id))))


@strawberry.type(description="A row of a table.")
class Record:
    id: strawberry.ID
    table_id: strawberry.ID
    values: JSON = strawberry.field(description="Column name -> value (no key for no value).")
    created_at: datetime


@strawberry.type
class Column:
    id: strawberry.ID = strawberry.field(description='"{table id}:{key}".')
    table_id: strawberry.ID
    key: str = strawberry.field(description="Names the column's values inside records.")
    name: str
    type: ColumnType
    required: bool
    unique: bool
    default: JSON | None
    options: JSON = strawberry.field(
        description="select: {values: [...]}; reference: {table: <table id>}."
    )
    created_at: datetime


@strawberry.type
class Rule:
    id: strawberry.ID
    table_id: strawberry.ID
    expression: str
    message: str | None
    severity: Severity
    created_at: datetime


@strawberry.type
class Trigger:
    id: strawberry.ID
    table_id: strawberry.ID
    event: TriggerEvent
    condition: str | None
    action: JSON
    created_at: datetime


@strawberry.type
class View:
    id: strawberry.ID
    table_id: strawberry.ID
    name: str | None
    column_ids: list[strawberry.ID]
    filter: JSON | None
    sort: JSON | None
    created_at: datetime

    @strawberry.field(description="The view's columns, in its order.")
    async def columns(self, info: Info) -> list[Column]:
        rows = {
            c["id"]: c for c in await info.context.catalog.children.load(("column", self.table_id))
        }
        return [build(Column, rows[i]) for i in self.column_ids if i in rows]

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> "View":
        return build(cls, {**row, "column_ids": row["columns"]})


@strawberry.type
class Grant:
    id: strawberry.ID
    table_id: strawberry.ID
    principal: str
    permissions: list[Permission]
    created_at: datetime


@strawberry.type
class ClientAccess:
    id: strawberry.ID
    table_id: strawberry.ID
    enabled: bool
    origins: list[str]
    rate_limit: int | None
    created_at: datetime


@strawberry.type
class PublicRead:
    id: strawberry.ID
    table_id: strawberry.ID
    ref: str
    view_id: strawberry.ID | None
    created_at: datetime

    @strawberry.field
    async def view(self, info: Info) -> View | None:
        if self.view_id is None:
            return None
        row = await info.context.catalog.by_id.load(("view", self.view_id))
        return View.of(row) if row else None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> "PublicRead":
        return build(cls, {**row, "view_id": row["view"]})


@strawberry.type
class Table:
    id: strawberry.ID
    scope_id: strawberry.ID
    name: str
    description: str | None
    settings: JSON = strawberry.field(
        description="Authored settings, plus the server-owned column_mapping and iac."
    )
    tags: list[str]
    created_at: datetime

    @strawberry.field
    async def columns(self, info: Info) -> list[Column]:
        return await _children(info, "column", self.id, Column)

    @strawberry.field
    async def rules(self, info: Info) -> list[Rule]:
        return await _children(info, "rule", self.id, Rule)

    @strawberry.field
    async def triggers(self, info: Info) -> list[Trigger]:
        return await _children(info, "trigger", self.id, Trigger)

    @strawberry.field
    async def views(self, info: Info) -> list[View]:
        return await _children(info, "view", self.id, View)

    @strawberry.field
    async def grants(self, info: Info) -> list[Grant]:
        return await _children(info, "grant", self.id, Grant)

    @strawberry.field
    async def client_access(self, info: Info) -> ClientAccess | None:
        found = await _children(info, "client_access", self.id, ClientAccess)
        return found[0] if found else None

    @strawberry.field
    async def public_reads(self, info: Info) -> list[PublicRead]:
        return await _children(info, "public_read", self.id, PublicRead)

    @strawberry.field(description="In creation order.")
    async def records(
        self, info: Info, first: FirstArg = DEFAULT_FIRST, after: AfterArg = None
    ) -> Connection[Record]:
        args = page_args(first, after, RECORD_KEY)
        page = await info.context.catalog.records.load((self.id, args))
        return connection(page, build_all(Record, page.rows), after=after)


@strawberry.type
class Command:
    id: strawberry.ID
    scope_id: strawberry.ID
    name: str
    description: str | None
    action: JSON
    created_at: datetime


@strawberry.type
class InsightSelection:
    id: strawberry.ID
    scope_id: strawberry.ID
    chatroom: strawberry.ID
    table_ids: list[strawberry.ID]
    created_at: datetime

    @strawberry.field
    async def tables(self, info: Info) -> list[Table]:
        rows = await info.context.catalog.by_id.load_many([("table", t) for t in self.table_ids])
        return [build(Table, r) for r in rows if r]

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> "InsightSelection":
        return build(cls, {**row, "table_ids": row["tables"]})


@strawberry.type(description="An isolated workspace, identified by its slug.")
class Scope:
    id: strawberry.ID
    slug: str
    name: str
    created_at: datetime

    @strawberry.field(description="In creation order.")
    async def tables(self, info: Info) -> list[Table]:
        return await _children(info, "table", self.id, Table)

    @strawberry.field
    async def commands(self, info: Info) -> list[Command]:
        return await _children(info, "command", self.id, Command)

    @strawberry.field
    async def insight_selections(self, info: Info) -> list[InsightSelection]:
        return await _children(info, "insight_selection", self.id, InsightSelection)


# Inputs: one per kind, every field optional. Creating requires what the domain says
# (e.g. a column's name and type: BAD_INPUT otherwise); updating changes only the
# fields given, and an explicit null clears an optional field.


@strawberry.input
class ScopeInput:
    slug: str | None = strawberry.UNSET
    name: str | None = strawberry.UNSET


@strawberry.input
class TableInput:
    name: str | None = strawberry.UNSET
    description: str | None = strawberry.UNSET
    settings: JSON | None = strawberry.field(
        default=strawberry.UNSET,
        description="Replaces the authored settings; column_mapping and iac are server-owned.",
    )
    tags: list[str] | None = strawberry.UNSET


@strawberry.input
class ColumnInput:
    name: str | None = strawberry.UNSET
    type: ColumnType | None = strawberry.UNSET
    required: bool | None = strawberry.UNSET
    unique: bool | None = strawberry.UNSET
    default: JSON | None = strawberry.UNSET
    options: JSON | None = strawberry.field(
        default=strawberry.UNSET,
        description="select: {values: [...]}; reference: {table: <table id>}.",
    )


@strawberry.input
class RuleInput:
    expression: str | None = strawberry.UNSET
    message: str | None = strawberry.UNSET
    severity: Severity | None = strawberry.UNSET


@strawberry.input
class TriggerInput:
    event: TriggerEvent | None = strawberry.UNSET
    condition: str | None = strawberry.UNSET
    action: JSON | None = strawberry.UNSET


@strawberry.input
class ViewInput:
    name: str | None = strawberry.UNSET
    columns: list[strawberry.ID] | None = strawberry.field(
        default=strawberry.UNSET, description="Column IDs (or keys) of the view's table."
    )
    filter: JSON | None = strawberry.UNSET
    sort: JSON | None = strawberry.UNSET


@strawberry.input
class GrantInput:
    principal: str | None = strawberry.UNSET
    permissions: list[Permission] | None = strawberry.UNSET


@strawberry.input
class ClientAccessInput:
    enabled: bool | None = strawberry.UNSET
    origins: list[str] | None = strawberry.UNSET
    rate_limit: int | None = strawberry.UNSET


@strawberry.input
class CommandInput:
    name: str | None = strawberry.UNSET
    description: str | None = strawberry.UNSET
    action: JSON | None = strawberry.UNSET


@strawberry.input
class InsightSelectionInput:
    chatroom: strawberry.ID | None = strawberry.UNSET
    tables: list[strawberry.ID] | None = strawberry.field(
        default=strawberry.UNSET, description="Table IDs of the same scope."
    )


@strawberry.input
class PublicReadInput:
    ref: str | None = strawberry.UNSET
    view: strawberry.ID | None = strawberry.field(
        default=strawberry.UNSET, description="A view of the same table; null for none."
    )


def _enums_as_values(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, list):
        return [_enums_as_values(v) for v in value]
    return value


def spec_of(given: Any) -> dict[str, Any]:
    """The fields an input carries (UNSET ones left out), enums as the domain's strings."""
    return {
        f.name: _enums_as_values(getattr(given, f.name))
        for f in dataclasses.fields(given)
        if getattr(given, f.name) is not strawberry.UNSET
    }
