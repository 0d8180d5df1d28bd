"""`infragraph token ...`: API tokens (admin), through the API."""

from typing import Any

import click

from app.cli.common import JSON_OUTPUT, ask, json_text

TOKEN_FIELDS = "name role states scopes createdBy createdAt expiresAt revokedAt lastUsedAt"
CREATE_TOKEN = f"""mutation($name: String!, $role: Role!, $states: [String!], $scopes: [String!],
                   $expiresDays: Float) {{
  createToken(name: $name, role: $role, states: $states, scopes: $scopes,
              expiresDays: $expiresDays) {{ token {{ {TOKEN_FIELDS} }} secret }}
}}"""
TOKENS = f"{{ tokens {{ {TOKEN_FIELDS} }} }}"
REVOKE_TOKEN = f"mutation($name: String!) {{ revokeToken(name: $name) {{ {TOKEN_FIELDS} }} }}"


@click.group(help="API tokens: who may do what (README, Access control). Admin only.")
def token() -> None:
    pass


def _reach(each: dict[str, Any]) -> str:
    """What a token touches, for a person."""
    places = [*each["states"], *(f"scope:{slug}" for slug in each["scopes"])]
    return ",".join(places) or "everything"


@token.command("create", help="Make a token; prints it once, as the last line of stdout.")
@click.argument("name")
@click.option("--role", type=click.Choice(["read", "plan", "write", "admin"]), required=True)
@click.option("--states", multiple=True, help="A state-name glob it touches (repeatable).")
@click.option("--scopes", multiple=True, help="An IaC scope slug it touches (repeatable).")
@click.option(
    "--expires",
    type=click.FloatRange(min=0, min_open=True),
    help="Days it holds, fractions kept (0.5: 12 hours).",
)
def token_create(
    name: str, role: str, states: tuple[str, ...], scopes: tuple[str, ...], expires: float | None
) -> None:
    variables = {
        "name": name,
        "role": role.upper(),
        "states": list(states),
        "scopes": list(scopes),
        "expiresDays": expires,
    }
    created = ask(CREATE_TOKEN, variables, "createToken")
    made = created["token"]
    expiry = f", expires {made['expiresAt']}" if made["expiresAt"] else ""
    click.echo(f"created: {name} ({role}, {_reach(made)}{expiry}); the token, shown only now:")
    click.echo(created["secret"])


@token.command("list", help="The tokens (never their secrets): name, role, reach, last use.")
@JSON_OUTPUT
def token_list(as_json: bool) -> None:
    found = ask(TOKENS, {}, "tokens")
    if as_json:
        click.echo(json_text(found))
        return
    for each in found:
        status = "revoked" if each["revokedAt"] else f"expires {each['expiresAt'] or 'never'}"
        click.echo(
            f"{each['name']}\t{each['role'].lower()}\t{_reach(each)}\t{status}\t"
            f"last used {each['lastUsedAt'] or 'never'}"
        )


@token.command("revoke", help="Revoke a token: it gets 401 from then on.")
@click.argument("name")
def token_revoke(name: str) -> None:
    ask(REVOKE_TOKEN, {"name": name}, "revokeToken")
    click.echo(f"revoked: {name}")
