"""The token root query fields, a mixin of the root Query (see app/api/schema.py)."""

import strawberry

from app import tokens
from app.api.context import Info
from app.api.tokens.types import ApiToken, token_of


@strawberry.type
class TokenQuery:
    @strawberry.field(description="Every API token, revoked ones too, by name (admin).")
    async def tokens(self, info: Info) -> list[ApiToken]:
        return [token_of(r) for r in await info.context.with_conn(tokens.list_tokens)]
