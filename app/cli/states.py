"""Terraform states through the API: import, export, states, prune, lock, unlock,
force-unlock."""

import getpass
import socket
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import click

from app import jsonutil
from app.cli.common import JSON_OUTPUT, ask, client, fail, json_text
from app.client import Refused

CHUNK = 1024 * 1024
EXPORT_STATE = (
    "mutation($name: String!, $serial: Int) { exportState(name: $name, serial: $serial) }"
)
STATES = """query($first: Int!, $after: String, $prefix: String) {
  states(first: $first, after: $after, filter: {namePrefix: $prefix}) {
    edges { node { name kind lock { id who } currentVersion { serial createdAt } } }
    pageInfo { hasNextPage endCursor }
  }
}"""
PRUNE = """mutation($states: String!, $keepLast: Int!, $keepDays: Float) {
  prune(states: $states, keepLast: $keepLast, keepDays: $keepDays) {
    state serials resources edges outputs chunks } }"""


def _upload(path: Path) -> Iterator[bytes]:
    """The file in chunks, with a progress bar on stderr for a big one."""
    size = path.stat().st_size
    with path.open("rb") as f:
        if size <= 8 * CHUNK:
            yield f.read()
            return
        with click.progressbar(length=size, label="uploading", file=sys.stderr) as bar:
            while chunk := f.read(CHUNK):
                bar.update(len(chunk))
                yield chunk


@click.command("import", help="Import a Terraform v4 state file as the state's next version.")
@click.argument("name")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def import_state(name: str, file: Path) -> None:
    try:
        written = client().state("POST", name, _upload(file))
    except Refused as error:
        fail(error)
    verb = "imported" if written["created"] else "already stored"
    click.echo(f"{verb}: {name} serial {written['serial']}", err=True)


@click.command(help="Print a state rendered from its normalized rows (current or --serial).")
@click.argument("name")
@click.option("--serial", type=int, help="A version's serial (default: the current one).")
def export(name: str, serial: int | None) -> None:
    document = ask(EXPORT_STATE, {"name": name, "serial": serial}, "exportState")
    sys.stdout.buffer.write(jsonutil.dumps(document, indent=True))


@click.command(help="List the states: name, kind, current serial, lock holder.")
@click.option("--prefix", help="Only names starting with it.")
@JSON_OUTPUT
def states(prefix: str | None, as_json: bool) -> None:
    found, after = [], None
    while True:
        page = ask(STATES, {"first": 1000, "after": after, "prefix": prefix}, "states")
        found += [edge["node"] for edge in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    if as_json:
        click.echo(json_text(found))
        return
    for state in found:
        version = state["currentVersion"]
        serial = f"serial {version['serial']}" if version else "no version"
        lock = state["lock"]
        held = f"  locked by {lock['who'] or '?'} ({lock['id']})" if lock else ""
        click.echo(f"{state['name']}  {state['kind'].lower()}  {serial}{held}")


@click.command(
    help="Delete old versions: keep the last N of each state, and those newer than D days."
)
@click.option(
    "--state",
    "states",
    required=True,
    help="A glob over state names (`*` any run, `/` too; `?` one character): team/*",
)
@click.option("--keep-last", type=click.IntRange(min=1), required=True, help="Versions kept.")
@click.option("--keep-days", type=float, help="Versions younger than this are kept too.")
@JSON_OUTPUT
def prune(states: str, keep_last: int, keep_days: float | None, as_json: bool) -> None:
    variables = {"states": states, "keepLast": keep_last, "keepDays": keep_days}
    pruned = ask(PRUNE, variables, "prune")
    if as_json:
        click.echo(json_text(pruned))
        return
    for state in pruned:
        click.echo(
            f"{state['state']}: pruned serials {', '.join(map(str, state['serials']))} "
            f"({state['resources']} resources, {state['edges']} edges, "
            f"{state['outputs']} outputs, {state['chunks']} chunks)"
        )
    if not pruned:
        click.echo(f"nothing to prune in states matching {states!r}")


@click.command(help="Lock a state as Terraform does; prints the lock ID (for unlock).")
@click.argument("name")
@click.option("--operation", default="infragraph lock", show_default=True)
@click.option("--info", "note", default="", help="A note for whoever meets the lock.")
def lock(name: str, operation: str, note: str) -> None:
    info = {
        "ID": str(uuid.uuid4()),
        "Operation": operation,
        "Info": note,
        "Who": f"{getpass.getuser()}@{socket.gethostname()}",
        "Version": "infragraph",
        "Created": datetime.now(UTC).isoformat(),
        "Path": "",
    }
    try:
        client().state("LOCK", name, jsonutil.dumps(info))
    except Refused as error:
        fail(error)
    click.echo(info["ID"])


def _unlock(name: str, body: bytes) -> None:
    try:
        done = client().state("UNLOCK", name, body)
    except Refused as error:
        fail(error)
    click.echo(f"unlocked: {name}" if done["unlocked"] else f"{name} was not locked", err=True)


@click.command(help="Release a lock this holder took (its lock ID).")
@click.argument("name")
@click.argument("lock_id")
def unlock(name: str, lock_id: str) -> None:
    _unlock(name, jsonutil.dumps({"ID": lock_id, "Operation": "infragraph unlock"}))


@click.command("force-unlock", help="Release whoever's lock on a state (recorded as forced).")
@click.argument("name")
def force_unlock(name: str) -> None:
    _unlock(name, b"")
