"""The API token types: a token as listed (never its secret), and a new one with it."""

from datetime import datetime

import strawberry

from app.access import Role
from app.db import Row

strawberry.enum(Role, name="Role", description="What a token may do (README, Access control).")


@strawberry.type(description="An API token; its secret is shown once, by createToken.")
class ApiToken:
    name: str
    role: Role
    states: list[str] = strawberry.field(description="State-name globs it touches.")
    scopes: list[str] = strawberry.field(description="IaC scope slugs it touches.")
    everywhere: bool = strawberry.field(
        description="Neither states nor scopes given: it touches everything."
    )
    created_by: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None = strawberry.field(
        description="Kept to the minute (a busy token is not written on every request)."
    )


@strawberry.type
class CreatedToken:
    token: ApiToken
    secret: str = strawberry.field(
        description="The token itself: shown only now (the server keeps its SHA-256)."
    )


def token_of(r: Row) -> ApiToken:
    return ApiToken(
        name=r["name"],
        role=Role(r["role"]),
        states=r["state_globs"],
        scopes=r["scopes"],
        everywhere=not r["state_globs"] and not r["scopes"],
        created_by=r["created_by"],
        created_at=r["created_at"],
        expires_at=r["expires_at"],
        revoked_at=r["revoked_at"],
        last_used_at=r["last_used_at"],
    )
