"""The `infragraph` command: serve, migrate, import, export; IaC plan, apply, export-iac."""

import argparse
import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg

from app import db, jsonutil
from app.config import Settings
from app.errors import AppError
from app.graph.store import export_state, write_version
from app.iac import service
from app.iac.document import LineError
from app.iac.plan import Plan
from app.tfstate import StateError, parse_state

CLI_ACTOR = "cli"


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


async def _with_conn(
    settings: Settings, work: Callable[[asyncpg.Connection], Awaitable[Any]]
) -> Any:
    conn = await asyncpg.connect(db.database_url(settings))
    try:
        await db.init_connection(conn)
        await db.migrate(conn)
        return await work(conn)
    finally:
        await conn.close()


def _read_file(path: Path) -> bytes:
    """Read a possibly big file in chunks, showing progress on stderr."""
    size = path.stat().st_size
    chunks, done, step = [], 0, 8 * 1024 * 1024
    with path.open("rb") as f:
        while chunk := f.read(step):
            chunks.append(chunk)
            done += len(chunk)
            if size > 4 * step:
                _progress(f"read {done // 1_048_576}/{size // 1_048_576} MiB")
    return b"".join(chunks)


async def import_state(settings: Settings, name: str, path: Path) -> None:
    body = _read_file(path)
    state = parse_state(body)
    _progress(f"parsed {len(state.instances)} instances, {len(state.edges)} edges; writing")

    async def work(conn: asyncpg.Connection) -> None:
        written = await write_version(
            conn,
            name,
            body,
            actor=CLI_ACTOR,
            action="import",
            state=state,
            detail={"file": path.name},
        )
        verb = "imported" if written.created else "already stored"
        _progress(f"{verb}: {name} serial {written.serial}")

    await _with_conn(settings, work)


async def export(settings: Settings, name: str, serial: int | None) -> None:
    async def work(conn: asyncpg.Connection) -> dict[str, Any]:
        return await export_state(conn, name, serial=serial, actor=CLI_ACTOR)

    document = await _with_conn(settings, work)
    sys.stdout.buffer.write(jsonutil.dumps(document, indent=True))


def _read_document(file: str) -> bytes:
    return sys.stdin.buffer.read() if file == "-" else _read_file(Path(file))


def _json(value: Any) -> str:
    return jsonutil.dumps(value).decode()


def _counts(summary: dict[str, int]) -> str:
    return ", ".join(f"{action} {n}" for action, n in summary.items())


def render_plan(plan: Plan) -> str:
    """The plan for a reviewer: summary, each action that changes something with its
    fields (noop and skip are only counted), warnings, and the hash to apply last."""
    lines = [f"system: {plan.system}", f"summary: {_counts(plan.summary)}"]
    for action in plan.actions:
        if action.action in ("noop", "skip"):
            continue
        where = f" (line {action.line})" if action.line is not None else ""
        why = f": {action.reason}" if action.reason else ""
        lines.append(f"  {action.action} {action.kind} {action.ref}{where}{why}")
        lines += [
            f"      {c.field}: desired {_json(c.desired)}, last applied {_json(c.last_applied)}, "
            f"live {_json(c.live)} ({c.reason})"
            for c in action.changes
        ]
    lines += [f"warning: {warning}" for warning in plan.warnings]
    lines.append(f"hash: {plan.hash}")
    return "\n".join(lines) + "\n"


async def plan(settings: Settings, scope: str, file: str) -> None:
    document = _read_document(file)
    planned = await _with_conn(settings, lambda conn: service.plan(conn, scope, document))
    sys.stdout.write(render_plan(planned))


async def apply(settings: Settings, scope: str, plan_hash: str, file: str) -> None:
    document = _read_document(file)
    applied = await _with_conn(
        settings, lambda conn: service.apply(conn, scope, document, plan_hash, actor=CLI_ACTOR)
    )
    print(f"applied: {applied.state_name} serial {applied.serial}")
    print(f"summary: {_counts(applied.summary)}")


async def export_iac(settings: Settings, scope: str, system: str) -> None:
    document = await _with_conn(settings, lambda conn: service.export(conn, scope, system))
    sys.stdout.buffer.write(document)


def _error_lines(exc: AppError) -> list[str]:
    """The message, and an invalid document's errors one per line."""
    errors = exc.detail.get("errors") if isinstance(exc.detail, dict) else None
    if not errors:
        return [exc.message]
    return [exc.message.splitlines()[0], *(str(LineError(**e)) for e in errors)]


async def _nothing(conn: asyncpg.Connection) -> None:
    return None


def serve(settings: Settings, host: str, port: int) -> None:
    from app import serving  # imported lazily: the other commands do not need uvicorn

    serving.run(settings, host, port)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="infragraph", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("serve", help="run the HTTP server")
    run.add_argument("--host", default="127.0.0.1")
    run.add_argument("--port", type=int, default=8080)
    commands.add_parser("migrate", help="apply pending database migrations")
    imp = commands.add_parser("import", help="import a Terraform v4 state file as a new version")
    imp.add_argument("name")
    imp.add_argument("file", type=Path)
    exp = commands.add_parser("export", help="print a state rendered from its normalized rows")
    exp.add_argument("name")
    exp.add_argument("--serial", type=int)
    pln = commands.add_parser("plan", help="show what applying an IaC document would change")
    pln.add_argument("--scope", required=True, help="the scope's slug")
    pln.add_argument("file", help="the JSONL document; - for stdin")
    apl = commands.add_parser("apply", help="apply an IaC document whose plan was reviewed")
    apl.add_argument("--scope", required=True, help="the scope's slug")
    apl.add_argument("--hash", required=True, help="the hash the reviewed plan printed")
    apl.add_argument("file", help="the JSONL document; - for stdin")
    exi = commands.add_parser("export-iac", help="print a system's resources as an IaC document")
    exi.add_argument("--scope", required=True, help="the scope's slug")
    exi.add_argument("--system", required=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    settings = Settings.from_env()
    try:
        if args.command == "serve":
            serve(settings, args.host, args.port)
        elif args.command == "migrate":
            asyncio.run(_with_conn(settings, _nothing))  # connecting migrates
            _progress("database is up to date")
        elif args.command == "import":
            asyncio.run(import_state(settings, args.name, args.file))
        elif args.command == "export":
            asyncio.run(export(settings, args.name, args.serial))
        elif args.command == "plan":
            asyncio.run(plan(settings, args.scope, args.file))
        elif args.command == "apply":
            asyncio.run(apply(settings, args.scope, args.hash, args.file))
        elif args.command == "export-iac":
            asyncio.run(export_iac(settings, args.scope, args.system))
    except AppError as exc:
        for line in _error_lines(exc):
            print(f"infragraph: {line}", file=sys.stderr)
        return 1
    except (StateError, OSError) as exc:
        print(f"infragraph: {exc}", file=sys.stderr)
        return 1
    return 0
