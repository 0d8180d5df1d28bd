"""`infragraph config push --state NAME plan.json`: record a plan's configuration as the
state's (POST /states/{name}/configurations), a command group of app/cli.py's `main`."""

import click

from app.cli import _client, _fail, _read
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
        found = _client().state("POST", f"{state}/configurations", _read(file))
    except Refused as error:
        _fail(error)
    verb = "recorded" if found["created"] else "unchanged, kept"
    click.echo(
        f"configuration {found['number']} of {found['state']} {verb}: "
        f"{found['modules']} module calls, {found['references']} references"
    )
