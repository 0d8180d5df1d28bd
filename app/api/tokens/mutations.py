"""The token mutations (admin), a mixin of the root Mutation (see app/api/schema.py)."""

import strawberry

from app import tokens
from app.access import Role
from app.api.context import Info
from app.api.tokens.types import ApiToken, CreatedToken, token_of


@strawberry.type
class TokenMutation:
    @strawberry.mutation(
        description="Make a token: `states` (globs) and `scopes` (IaC slugs) say what it "
        "touches (neither: everything); it expires after `expiresDays` (none: never). "
        "The secret is in the answer, and nowhere else."
    )
    async def create_token(
        self,
        info: Info,
        name: str,
        role: Role,
        states: list[str] | None = None,
        scopes: list[str] | None = None,
        expires_days: float | None = None,
    ) -> CreatedToken:
        row, secret = await info.context.with_conn(
            tokens.create_token,
            name,
            role,
            state_globs=states or [],
            scopes=scopes or [],
            expires_days=expires_days,
            created_by=info.context.actor,
        )
        info.context.token_cache.forget()  # a first token closes an open server at once
        return CreatedToken(token=token_of(row), secret=secret)

    @strawberry.mutation(
        description="Revoke a token: from now on it gets 401, and its websockets are closed "
        "(4403). The last live admin token is kept unless the server has a bootstrap token "
        "(INFRAGRAPH_API_TOKENS): CONFLICT."
    )
    async def revoke_token(self, info: Info, name: str) -> ApiToken:
        row = await info.context.with_conn(
            tokens.revoke_token,
            name,
            revoked_by=info.context.actor,
            bootstrap_admin=bool(info.context.settings.api_tokens),
        )
        info.context.token_cache.forget()
        return token_of(row)
