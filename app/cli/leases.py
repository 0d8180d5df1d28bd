"""`infragraph lease acquire|release`: leases taken from a Terraform plan (app/leases/),
commands of `infragraph`. Exit 0, or 1 when the server refuses (LEASE_CONFLICT,
STALE_PLAN: the reason on stderr, naming the other lease, its holder and addresses)."""

import json
import shlex
import zipfile
from typing import Any

import click

from app import jsonutil
from app.cli.common import ask, json_text, read
from app.leases.footprint import lease_plan

LEASE_FIELDS = """id state holder baseSerial addresses outputs ttlSeconds expiresAt lockId
    writes createdAt env"""
ACQUIRE = f"""mutation($state: String!, $plan: JSON!, $ttl: Int!, $serial: Int) {{
  acquireLease(state: $state, plan: $plan, ttlSeconds: $ttl, serial: $serial) {{
    {LEASE_FIELDS} }} }}"""
RELEASE = f"""mutation($id: ID!) {{ releaseLease(id: $id) {{ {LEASE_FIELDS} }} }}"""


def planfile_serial(path: str) -> int:
    """The serial of the state a saved plan (`terraform plan -out`) was made from: the
    plan file is a zip holding that state as `tfstate`."""
    try:
        with zipfile.ZipFile(path) as plan:
            state = json.loads(plan.read("tfstate"))
        return int(state["serial"])
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise click.ClickException(f"{path} is not a saved Terraform plan: {exc}") from None


def exports(lease: dict[str, Any]) -> str:
    """Shell lines a CI job evaluates before `terraform apply tfplan`."""
    env = {**lease["env"], "INFRAGRAPH_LEASE": lease["id"]}
    return "\n".join(f"export {k}={shlex.quote(str(v))}" for k, v in env.items())


def describe(lease: dict[str, Any]) -> str:
    held = [*lease["addresses"], *(f"output.{o}" for o in lease["outputs"])]
    return "\n".join(
        [
            f"lease {lease['id']} of {lease['state']} (serial {lease['baseSerial']}) for "
            f"{lease['holder']}, until {lease['expiresAt']} (renewed by each request)",
            *(f"  {address}" for address in held),
        ]
    )


@click.group(help="Leases: what a plan changes, held while its apply runs beside others.")
def lease() -> None:
    pass


@lease.command("acquire", help="Lease what a plan (`terraform show -json tfplan`) changes.")
@click.option("--state", "state", required=True, help="The state the plan is of.")
@click.argument("file")
@click.option("--ttl", "ttl", type=int, default=3600, show_default=True, help="Seconds.")
@click.option(
    "--planfile",
    help="The saved plan itself (`-out`): the serial it was made from is checked.",
)
@click.option("--export", "export", is_flag=True, help="Print shell exports for the apply.")
@click.option("--json", "as_json", is_flag=True, help="Print the lease as JSON.")
def acquire(
    state: str, file: str, ttl: int, planfile: str | None, export: bool, as_json: bool
) -> None:
    try:
        plan = jsonutil.read(read(file))
    except ValueError as exc:
        raise click.ClickException(f"{file} is not JSON: {exc}") from None
    serial = planfile_serial(planfile) if planfile else None
    # what a lease reads of the plan, not its values (megabytes for a big state)
    variables = {"state": state, "plan": lease_plan(plan), "ttl": ttl, "serial": serial}
    found = ask(ACQUIRE, variables, "acquireLease")
    if as_json:
        click.echo(json_text(found))
    elif export:
        click.echo(exports(found))
    else:
        click.echo(describe(found))


@lease.command("release", help="End a lease (its holder; an admin force-releases).")
@click.argument("lease_id")
def release(lease_id: str) -> None:
    found = ask(RELEASE, {"id": lease_id}, "releaseLease")
    click.echo(f"released: lease {found['id']} of {found['state']}")
