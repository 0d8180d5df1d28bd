"""`infragraph whoami` and `infragraph readers`: what a token may do, who reads outputs;
`infragraph login --oidc`: a CI job's ID token exchanged for a server token."""

from typing import Any

import click

from app.cli.common import JSON_OUTPUT, ask, client, fail, json_text
from app.client import Refused

VIEWER = """query($state: String!, $on: Boolean!) { viewer {
  name role states scopes everywhere
  on(name: $state) @include(if: $on) {
    state read outputs sensitiveOutputs rawState planLock write forceUnlock setOutputReaders can
  } } }"""
SET_READERS = """mutation($state: String!, $tokens: [String!], $states: [String!]) {
  setOutputReaders(state: $state, tokens: $tokens, states: $states) { tokens states } }"""
READERS = "query($state: String!) { state(name: $state) { outputReaders { tokens states } } }"

# What each ability means with Terraform, for a person
_MEANS = {
    "read": "GraphQL and the dashboard (sensitive values masked)",
    "outputs": "terraform_remote_state of its outputs (a GET without resources)",
    "sensitiveOutputs": "its sensitive outputs too",
    "rawState": "terraform init, plan -lock=false, output, state pull",
    "planLock": "terraform plan (a lock for a plan)",
    "write": "terraform apply, state push, a lock for anything, delete",
    "forceUnlock": "terraform force-unlock of anyone's lock",
    "setOutputReaders": "infragraph readers set",
}


@click.command(
    help="The token in use: its name, role, states and scopes; with --state, what "
    "it may do on that state (and which Terraform commands that allows)."
)
@click.option("--state", "state", help="A state name (it need not exist).")
@JSON_OUTPUT
def whoami(state: str | None, as_json: bool) -> None:
    viewer = ask(VIEWER, {"state": state or "", "on": state is not None}, "viewer")
    if as_json:
        click.echo(json_text(viewer))
        return
    nothing = "everything" if viewer["everywhere"] else "none"
    click.echo(f"token: {viewer['name']}")
    click.echo(f"role: {viewer['role'].lower()}")
    click.echo(f"states: {','.join(viewer['states']) or nothing}")
    click.echo(f"scopes: {','.join(viewer['scopes']) or nothing}")
    if state is None:
        return
    on: dict[str, Any] = viewer["on"]
    click.echo(f"on {state}: {', '.join(on['can']) or 'nothing'}")
    for name, means in _MEANS.items():
        click.echo(f"  {'yes' if on[name] else 'no ':3} {name}: {means}")


@click.group(help="Who may read a state's outputs (terraform_remote_state) besides its readers.")
def readers() -> None:
    pass


@readers.command("set", help="Name the readers (replacing those named): an admin, or its writers.")
@click.argument("state")
@click.option("--token", "tokens", multiple=True, help="A token name (repeatable).")
@click.option("--states", "states", multiple=True, help="A consumer-state glob (repeatable).")
def readers_set(state: str, tokens: tuple[str, ...], states: tuple[str, ...]) -> None:
    variables = {"state": state, "tokens": list(tokens), "states": list(states)}
    named = ask(SET_READERS, variables, "setOutputReaders")
    click.echo(f"{state}: outputs read by tokens {','.join(named['tokens']) or 'none'}")
    click.echo(f"{state}: outputs read by states {','.join(named['states']) or 'none'}")


@readers.command("show", help="Who a state names as readers of its outputs.")
@click.argument("state")
@JSON_OUTPUT
def readers_show(state: str, as_json: bool) -> None:
    found = ask(READERS, {"state": state}, "state")
    if found is None:
        raise click.ClickException(f"no state {state!r}")
    named = found["outputReaders"]
    if as_json:
        click.echo(json_text(named))
        return
    click.echo(f"tokens: {','.join(named['tokens']) or 'none'}")
    click.echo(f"states: {','.join(named['states']) or 'none'}")


@click.command(
    help="Exchange a CI job's OIDC ID token for a short-lived server token with its rule's "
    "role and states, printed on stdout (use it as INFRAGRAPH_TOKEN, or as Terraform's "
    "http backend password with username oidc)."
)
@click.option("--oidc", "id_token", required=True, help="The ID token (a JWT).")
@click.option("--ttl", type=float, help="Seconds it lives (at most the issuer's maxTtlSeconds).")
@JSON_OUTPUT
def login(id_token: str, ttl: float | None, as_json: bool) -> None:
    try:
        answer = client().exchange_oidc(id_token, ttl)
    except Refused as error:
        fail(error)
    if as_json:
        click.echo(json_text(answer))
        return
    click.echo(answer["token"])
    click.echo(
        f"{answer['principal']} ({answer['role']}) on {', '.join(answer['states'])} "
        f"until {answer['expiresAt']}",
        err=True,
    )
