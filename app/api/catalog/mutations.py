"""The catalog's mutations, a mixin of the root Mutation (see app/api/schema.py).

For each kind: create{Kind}(parent, input), update{Kind}(id, input) (only the fields
given), delete{Kind}(id) -> the deleted ID. A scope argument is its slug, a table
argument its ID. Client access is one per table: setClientAccess creates or changes it.
The generic three are made by the factories below (no `from __future__ import
annotations` here: the resolvers' annotations must be the classes themselves).
"""

from typing import Any, TypeVar

import asyncpg
import strawberry
from strawberry.scalars import JSON

from app.api.catalog.types import (
    ClientAccess,
    ClientAccessInput,
    Column,
    ColumnInput,
    Command,
    CommandInput,
    Grant,
    GrantInput,
    InsightSelection,
    InsightSelectionInput,
    PublicRead,
    PublicReadInput,
    Record,
    Rule,
    RuleInput,
    Scope,
    ScopeInput,
    Table,
    TableInput,
    Trigger,
    TriggerInput,
    View,
    ViewInput,
    build,
    builder,
    spec_of,
)
from app.api.context import Info
from app.catalog import records, resources, scopes, tables

T = TypeVar("T")


def _label(kind: str) -> str:
    name = kind.replace("_", " ")
    return ("an " if name[0] in "aeiou" else "a ") + name


async def _create_in_scope(
    conn: asyncpg.Connection, kind: str, slug: str, spec: dict[str, Any]
) -> dict[str, Any]:
    scope = await scopes.scope_by_slug(conn, slug)
    return await resources.create(conn, kind, scope["id"], spec)


def _creator(kind: str, parent: str, given: type, out: type[T]) -> Any:
    of = builder(out)
    if parent == "scope":

        async def in_scope(info: Info, scope: str, input: given) -> out:  # type: ignore[valid-type]
            return of(await info.context.with_conn(_create_in_scope, kind, scope, spec_of(input)))

        return strawberry.mutation(
            resolver=in_scope, description=f"Create {_label(kind)} in a scope."
        )

    async def in_table(info: Info, table: strawberry.ID, input: given) -> out:  # type: ignore[valid-type]
        return of(await info.context.with_conn(resources.create, kind, table, spec_of(input)))

    return strawberry.mutation(resolver=in_table, description=f"Create {_label(kind)} in a table.")


def _updater(kind: str, given: type, out: type[T]) -> Any:
    of = builder(out)

    async def update(info: Info, id: strawberry.ID, input: given) -> out:  # type: ignore[valid-type]
        return of(await info.context.with_conn(resources.update, kind, id, spec_of(input)))

    return strawberry.mutation(
        resolver=update, description=f"Change the given fields of {_label(kind)}."
    )


def _deleter(kind: str) -> Any:
    async def delete(info: Info, id: strawberry.ID) -> strawberry.ID:
        return strawberry.ID((await info.context.with_conn(resources.delete, kind, id))["id"])

    return strawberry.mutation(
        resolver=delete, description=f"Delete {_label(kind)}; returns its ID."
    )


async def _update_scope(
    conn: asyncpg.Connection, slug: str, changes: dict[str, Any]
) -> dict[str, Any]:
    return await scopes.update_scope(conn, (await scopes.scope_by_slug(conn, slug))["id"], changes)


async def _delete_scope(conn: asyncpg.Connection, slug: str) -> dict[str, Any]:
    return await scopes.delete_scope(conn, (await scopes.scope_by_slug(conn, slug))["id"])


@strawberry.type
class CatalogMutation:
    @strawberry.mutation(description="Create a scope (slug: lowercase letters, digits, - and _).")
    async def create_scope(self, info: Info, slug: str, name: str) -> Scope:
        return build(Scope, await info.context.with_conn(scopes.create_scope, slug, name))

    @strawberry.mutation
    async def update_scope(self, info: Info, slug: str, input: ScopeInput) -> Scope:
        return build(Scope, await info.context.with_conn(_update_scope, slug, spec_of(input)))

    @strawberry.mutation(description="Delete a scope and everything in it; returns its ID.")
    async def delete_scope(self, info: Info, slug: str) -> strawberry.ID:
        return strawberry.ID((await info.context.with_conn(_delete_scope, slug))["id"])

    create_table = _creator("table", "scope", TableInput, Table)
    update_table = _updater("table", TableInput, Table)
    delete_table = _deleter("table")

    @strawberry.mutation(description="Add a tag to a table (nothing when it has it).")
    async def add_table_tag(self, info: Info, id: strawberry.ID, tag: str) -> Table:
        return build(Table, await info.context.with_conn(tables.add_table_tag, id, tag))

    @strawberry.mutation
    async def remove_table_tag(self, info: Info, id: strawberry.ID, tag: str) -> Table:
        return build(Table, await info.context.with_conn(tables.remove_table_tag, id, tag))

    create_column = _creator("column", "table", ColumnInput, Column)
    update_column = _updater("column", ColumnInput, Column)
    delete_column = _deleter("column")
    create_rule = _creator("rule", "table", RuleInput, Rule)
    update_rule = _updater("rule", RuleInput, Rule)
    delete_rule = _deleter("rule")
    create_trigger = _creator("trigger", "table", TriggerInput, Trigger)
    update_trigger = _updater("trigger", TriggerInput, Trigger)
    delete_trigger = _deleter("trigger")
    create_view = _creator("view", "table", ViewInput, View)
    update_view = _updater("view", ViewInput, View)
    delete_view = _deleter("view")
    create_grant = _creator("grant", "table", GrantInput, Grant)
    update_grant = _updater("grant", GrantInput, Grant)
    delete_grant = _deleter("grant")

    @strawberry.mutation(description="Create the table's client access, or change it.")
    async def set_client_access(
        self, info: Info, table: strawberry.ID, input: ClientAccessInput
    ) -> ClientAccess:
        row = await info.context.with_conn(resources.set_client_access, table, spec_of(input))
        return build(ClientAccess, row)

    delete_client_access = _deleter("client_access")
    create_command = _creator("command", "scope", CommandInput, Command)
    update_command = _updater("command", CommandInput, Command)
    delete_command = _deleter("command")
    create_insight_selection = _creator(
        "insight_selection", "scope", InsightSelectionInput, InsightSelection
    )
    update_insight_selection = _updater(
        "insight_selection", InsightSelectionInput, InsightSelection
    )
    delete_insight_selection = _deleter("insight_selection")
    create_public_read = _creator("public_read", "table", PublicReadInput, PublicRead)
    update_public_read = _updater("public_read", PublicReadInput, PublicRead)
    delete_public_read = _deleter("public_read")

    @strawberry.mutation(description="Insert a record; values by column name.")
    async def insert_record(self, info: Info, table: strawberry.ID, values: JSON) -> Record:
        return build(Record, await info.context.with_conn(records.insert_record, table, values))

    @strawberry.mutation(description="Change the given values (by column name; null removes).")
    async def update_record(self, info: Info, id: strawberry.ID, values: JSON) -> Record:
        return build(Record, await info.context.with_conn(records.update_record, id, values))

    @strawberry.mutation
    async def delete_record(self, info: Info, id: strawberry.ID) -> strawberry.ID:
        return strawberry.ID((await info.context.with_conn(records.delete_record, id))["id"])
