"""`infragraph config push --state NAME plan.json`: record a plan's configuration as the
state's (POST /states/{name}/configurations)."""

import click

from app.cli.common import client, fail, read
from app.client import Refused


@click.group(help="The configuration graph: a state's modules and references.")
def config() -> None:
    pass


@config.command(
    help="Record the configuration of a plan's JSON (`terraform show -json tfplan`) as the "
    "state's; kept when it differs from the state's latest."
)
@click.option("--state", "state", required=True, help="The state the plan is of.")
@click.argument("file")
def push(state: str, file: str) -> None:
    try:
        found = client().state("POST", f"{state}/configurations", read(file))
    except Refused as error:
        fail(error)
    verb = "recorded" if found["created"] else "unchanged, kept"
    click.echo(
        f"configuration {found['number']} of {found['state']} {verb}: "
        f"{found['modules']} module calls, {found['references']} references"
    )
