"""What every command of `infragraph` shares: its client of the API, refusals (exit 1),
reading a document, JSON output, and the common options."""

import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from app import jsonutil
from app.client import Client, Refused


def fail(error: Refused) -> NoReturn:
    for line in error.lines:
        click.echo(f"infragraph: {line}", err=True)
    sys.exit(1)


def client() -> Client:
    return Client.from_env()


def ask(query: str, variables: dict[str, Any], field: str) -> Any:
    """`field` of a GraphQL operation's data; a refusal ends the command (exit 1)."""
    try:
        return client().graphql(query, variables)[field]
    except Refused as error:
        fail(error)


def report(result: dict[str, Any], as_json: bool, *lines: str) -> None:
    click.echo(json_text(result) if as_json else "\n".join(lines))


def read(path: str) -> bytes:
    """A file's bytes (`-`: stdin); a missing or unreadable file is refused (exit 1)."""
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        fail(Refused([str(exc)]))


def text(document: bytes) -> str:
    """The document as text; invalid UTF-8 is refused here, by line, as the server would
    (which refuses lone surrogates in a request, so they cannot carry the bytes there)."""
    try:
        return document.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = document.rfind(b"\n", 0, exc.start) + 1
        line = document.count(b"\n", 0, exc.start) + 1
        fail(Refused([f"line {line}: not valid UTF-8 (byte {exc.start - line_start + 1})"]))


def json_text(value: Any) -> str:
    return jsonutil.dumps(value).decode()


SCOPE = click.option("--scope", required=True, help="The scope's slug.")
SYSTEM = click.option("--system", required=True, help="The IaC system (a document's owner).")
JSON_OUTPUT = click.option("--json", "as_json", is_flag=True, help="JSON for machines.")
DOCUMENT = click.argument("file", type=click.Path(allow_dash=True, dir_okay=False))
