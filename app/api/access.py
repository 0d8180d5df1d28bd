"""Who may call which root field of the schema: GraphQL's one enforcement point.

RULES holds one check per root field (`Type.field`), run before the field's resolver
with its arguments; `guard` wraps every root field of the schema with its check. A
root Query or Subscription field without a rule is open to every token (the read
role): its resolver must then filter what it reads (app/access.py says how). A
Mutation without a rule is admin only. tests/api/test_access.py fails for a root
field with no row in its matrix, so a new operation gets a rule and a row.
"""

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import strawberry
from graphql import GraphQLField, GraphQLResolveInfo

from app.access import Role
from app.api.context import Context
from app.catalog import scopes
from app.errors import NotFound

# A rule: (the context, the field's arguments, what the call is, for a refusal to say)
Check = Callable[[Context, Mapping[str, Any], str], Awaitable[None]]


def role(needed: Role) -> Check:
    async def check(context: Context, args: Mapping[str, Any], doing: str) -> None:
        context.principal.require(needed, doing)

    return check


def in_state(needed: Role, arg: str) -> Check:
    """The role, on the state named by argument `arg`."""

    async def check(context: Context, args: Mapping[str, Any], doing: str) -> None:
        context.principal.require_state(needed, args[arg], doing)

    return check


def in_scope(needed: Role, arg: str) -> Check:
    """The role, in the IaC scope whose slug is argument `arg`."""

    async def check(context: Context, args: Mapping[str, Any], doing: str) -> None:
        context.principal.require_scope(needed, args[arg], doing)

    return check


def seen_scope(arg: str) -> Check:
    """A read of a scope: one the token does not touch is absent, as an unknown one is."""

    async def check(context: Context, args: Mapping[str, Any], doing: str) -> None:
        slug = args[arg]
        if not context.principal.may_touch_scope(slug):
            raise NotFound(f"no scope {slug!r}")

    return check


def of_catalog(kind: str, arg: str) -> Check:
    """A catalog write on the object of `kind` whose ID is argument `arg`: in its scope.
    An object of a scope the token does not touch is absent, as an unknown one is (the
    error the mutation gives for an unknown ID): its scope is not told."""

    async def check(context: Context, args: Mapping[str, Any], doing: str) -> None:
        principal = context.principal
        principal.require(Role.WRITE, doing)
        if principal.everywhere:
            return  # no lookup: it may write in every scope
        slug = await context.with_conn(scopes.slug_of, kind, args[arg])
        if slug is not None and not principal.may_touch_scope(slug):
            raise NotFound(f"no {kind} {args[arg]!r}")

    return check


_TABLE_KINDS = ("column", "rule", "trigger", "view", "grant", "public_read")
_SCOPE_KINDS = ("table", "command", "insight_selection")


def _camel(kind: str) -> str:
    return "".join(part.title() for part in kind.split("_"))


RULES: dict[str, Check] = {
    "Query.tokens": role(Role.ADMIN),
    "Query.iacState": seen_scope("scope"),
    "Query.export": seen_scope("scope"),
    "Mutation.prune": role(Role.ADMIN),
    "Mutation.exportState": in_state(Role.WRITE, "name"),  # every value, as raw bytes hold
    "Mutation.plan": in_scope(Role.WRITE, "scope"),
    "Mutation.apply": in_scope(Role.WRITE, "scope"),
    "Mutation.release": in_scope(Role.WRITE, "scope"),
    "Mutation.createScope": in_scope(Role.WRITE, "slug"),
    "Mutation.updateScope": in_scope(Role.WRITE, "slug"),
    "Mutation.deleteScope": role(Role.ADMIN),
    **{f"Mutation.create{_camel(k)}": in_scope(Role.WRITE, "scope") for k in _SCOPE_KINDS},
    **{f"Mutation.create{_camel(k)}": of_catalog("table", "table") for k in _TABLE_KINDS},
    **{
        f"Mutation.{verb}{_camel(k)}": of_catalog(k, "id")
        for k in (*_SCOPE_KINDS, *_TABLE_KINDS)
        for verb in ("update", "delete")
    },
    "Mutation.deleteClientAccess": of_catalog("client_access", "id"),
    "Mutation.setClientAccess": of_catalog("table", "table"),
    "Mutation.addTableTag": of_catalog("table", "id"),
    "Mutation.removeTableTag": of_catalog("table", "id"),
    "Mutation.insertRecord": of_catalog("table", "table"),
    "Mutation.updateRecord": of_catalog("record", "id"),
    "Mutation.deleteRecord": of_catalog("record", "id"),
    "Mutation.createPolicy": role(Role.ADMIN),
    "Mutation.updatePolicy": role(Role.ADMIN),
    "Mutation.deletePolicy": role(Role.ADMIN),
    "Mutation.setOutputReaders": in_state(Role.WRITE, "state"),
    "Mutation.createToken": role(Role.ADMIN),
    "Mutation.revokeToken": role(Role.ADMIN),
    "Mutation.submitPlan": in_state(Role.READ, "state"),
    "Mutation.pushConfiguration": in_state(Role.PLAN, "state"),
    "Mutation.acquireLease": in_state(Role.WRITE, "state"),
    # its holder (app/leases/store.py: release), or an admin
    "Mutation.releaseLease": role(Role.WRITE),
    "Query.webhooks": role(Role.ADMIN),
    "Mutation.createWebhook": role(Role.ADMIN),
    "Mutation.updateWebhook": role(Role.ADMIN),
    "Mutation.deleteWebhook": role(Role.ADMIN),
    "Mutation.redeliverWebhook": role(Role.ADMIN),
}


async def _anyone(context: Context, args: Mapping[str, Any], doing: str) -> None:
    return None


# What a root field without a rule needs.
_DEFAULTS: dict[str, Check] = {
    "Query": _anyone,
    "Subscription": _anyone,
    "Mutation": role(Role.ADMIN),
}


def rule_of(type_name: str, field_name: str) -> Check:
    return RULES.get(f"{type_name}.{field_name}", _DEFAULTS[type_name])


def _guarded(resolve: Callable[..., Any], check: Check, name: str) -> Callable[..., Any]:
    async def guarded(source: Any, info: GraphQLResolveInfo[Context], /, **args: Any) -> Any:
        context: Context = info.context
        await check(context, args, f"call {name}")
        result = resolve(source, info, **args)
        return await result if inspect.isawaitable(result) else result

    return guarded


def guard(schema: strawberry.Schema) -> None:
    """Wrap each root field's resolver (a subscription's source) with its rule."""
    graphql_schema = schema._schema
    roots = (
        graphql_schema.query_type,
        graphql_schema.mutation_type,
        graphql_schema.subscription_type,
    )
    for root in roots:
        if root is None:
            continue
        for name, field in root.fields.items():
            check = rule_of(root.name, name)
            _wrap(field, "subscribe" if root.name == "Subscription" else "resolve", check, name)


def _wrap(field: GraphQLField, attribute: str, check: Check, name: str) -> None:
    original = getattr(field, attribute)
    if original is not None:
        setattr(field, attribute, _guarded(original, check, name))
