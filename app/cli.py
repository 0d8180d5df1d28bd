"""The `infragraph` command.

`serve`, `migrate` and `rotate-key` use the database (DATABASE_URL, else the embedded
one); every other command talks to a running server through its API: INFRAGRAPH_URL (default
http://127.0.0.1:8080) with the token INFRAGRAPH_TOKEN. Exit codes: 0 done, 1 refused
(the reason on stderr), 2 usage; `plan --detailed-exitcode`: 2 when it has changes.
Shell completion: `eval "$(_INFRAGRAPH_COMPLETE=bash_source infragraph)"` (zsh_source,
fish_source).
"""

import getpass
import socket
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from app import jsonutil
from app.client import Client, Refused

if TYPE_CHECKING:
    from app.config import Settings

CHUNK = 1024 * 1024
SUMMARY = "create update delete move adopt orphaned noop insert skip"
PLAN_FIELDS = f"""hash system warnings summary {{ {SUMMARY} }}
    actions {{ action kind ref reason line changes {{ field desired lastApplied live reason }} }}
    violations {{ policy severity enforce address }}"""
PLAN = f"""mutation($scope: String!, $document: String!) {{
  plan(scope: $scope, document: $document) {{ {PLAN_FIELDS} }}
}}"""
APPLY = f"""mutation($scope: String!, $document: String!, $hash: String!) {{
  apply(scope: $scope, document: $document, hash: $hash) {{
    stateName version {{ serial }} summary {{ {SUMMARY} }}
  }}
}}"""
RELEASE = """mutation($scope: String!, $system: String!, $refs: [String!]!) {
  release(scope: $scope, system: $system, refs: $refs) { stateName released version { serial } }
}"""
EXPORT_IAC = "query($scope: String!, $system: String!) { export(scope: $scope, system: $system) }"
EXPORT_STATE = (
    "mutation($name: String!, $serial: Int) { exportState(name: $name, serial: $serial) }"
)
STATES = """query($first: Int!, $after: String, $prefix: String) {
  states(first: $first, after: $after, filter: {namePrefix: $prefix}) {
    edges { node { name kind lock { id who } currentVersion { serial createdAt } } }
    pageInfo { hasNextPage endCursor }
  }
}"""


def _fail(error: Refused) -> NoReturn:
    for line in error.lines:
        click.echo(f"infragraph: {line}", err=True)
    sys.exit(1)


def _client() -> Client:
    return Client.from_env()


def _ask(query: str, variables: dict[str, Any], field: str) -> Any:
    """`field` of a GraphQL operation's data; a refusal ends the command (exit 1)."""
    try:
        return _client().graphql(query, variables)[field]
    except Refused as error:
        _fail(error)


def _report(result: dict[str, Any], as_json: bool, *lines: str) -> None:
    click.echo(_json(result) if as_json else "\n".join(lines))


def _read(path: str) -> bytes:
    """A file's bytes (`-`: stdin); a missing or unreadable file is refused (exit 1)."""
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        _fail(Refused([str(exc)]))


def _text(document: bytes) -> str:
    """The document as text; invalid UTF-8 is refused here, by line, as the server would
    (which refuses lone surrogates in a request, so they cannot carry the bytes there)."""
    try:
        return document.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = document.rfind(b"\n", 0, exc.start) + 1
        line = document.count(b"\n", 0, exc.start) + 1
        _fail(Refused([f"line {line}: not valid UTF-8 (byte {exc.start - line_start + 1})"]))


def _json(value: Any) -> str:
    return jsonutil.dumps(value).decode()


def _counts(summary: dict[str, int]) -> str:
    return ", ".join(f"{action} {summary[action]}" for action in SUMMARY.split())


def render_plan(plan: dict[str, Any]) -> str:
    """The plan for a reviewer: summary, each action that changes something with its
    fields (desired / last applied / live and why; noop and skip are only counted),
    warnings, the policy violations it would open, and the hash to apply last."""
    lines = [f"system: {plan['system']}", f"summary: {_counts(plan['summary'])}"]
    for action in plan["actions"]:
        if action["action"] in ("noop", "skip"):
            continue
        where = f" (line {action['line']})" if action["line"] is not None else ""
        why = f": {action['reason']}" if action["reason"] else ""
        lines.append(f"  {action['action']} {action['kind']} {action['ref']}{where}{why}")
        lines += [
            f"      {c['field']}: desired {_json(c['desired'])}, last applied "
            f"{_json(c['lastApplied'])}, live {_json(c['live'])} ({c['reason']})"
            for c in action["changes"]
        ]
    lines += [f"warning: {warning}" for warning in plan["warnings"]]
    lines += [
        f"violation: {v['address']} would violate policy {v['policy']} "
        f"({v['severity'].lower()}" + (", enforced: apply will refuse)" if v["enforce"] else ")")
        for v in plan["violations"]
    ]
    lines.append(f"hash: {plan['hash']}")
    return "\n".join(lines) + "\n"


def _changes_anything(summary: dict[str, int]) -> bool:
    return any(n for action, n in summary.items() if action not in ("noop", "skip"))


SCOPE = click.option("--scope", required=True, help="The scope's slug.")
SYSTEM = click.option("--system", required=True, help="The IaC system (a document's owner).")
JSON_OUTPUT = click.option("--json", "as_json", is_flag=True, help="JSON for machines.")
DOCUMENT = click.argument("file", type=click.Path(allow_dash=True, dir_okay=False))


@click.group(help=__doc__, context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    pass


# --- the database: serve and migrate ----------------------------------------------------


def _settings() -> "Settings":
    """The settings from the environment; a bad one ends the command (exit 1)."""
    from app.config import Settings

    try:
        return Settings.from_env()
    except ValueError as exc:
        _fail(Refused([str(exc)]))


@main.command(help="Run the HTTP server (migrates the database first).")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8080, show_default=True)
def serve(host: str, port: int) -> None:
    from app import serving  # imported lazily: the other commands do not need uvicorn

    serving.run(_settings(), host, port)


@main.command(help="Apply pending database migrations.")
def migrate() -> None:
    import asyncio

    import asyncpg

    from app import db

    settings = _settings()

    async def run() -> list[str]:
        conn = await asyncpg.connect(db.database_url(settings))
        try:
            await db.init_connection(conn)
            return await db.migrate(conn, citus=settings.citus)
        finally:
            await conn.close()

    try:
        for step in asyncio.run(run()):
            click.echo(step, err=True)
    except (OSError, asyncpg.PostgresError) as exc:
        _fail(Refused([f"migrate: {exc}"]))
    click.echo("database is up to date", err=True)


@main.command(
    "rotate-key",
    help="""Re-seal every state under INFRAGRAPH_ENCRYPTION_KEY (README, "Secrets and
    encryption at rest"); INFRAGRAPH_ENCRYPTION_KEY_OLD opens what the previous key
    sealed. Also the first time a key is set (from clear), and once after upgrading to
    split secrets out of rows written before. Batches, one state at a time; safe while
    the server runs (with both keys); run it again to carry on after a stop.""",
)
def rotate_key() -> None:
    import asyncio

    import asyncpg

    from app import crypto, db
    from app.catalog.kinds import RESOURCE_KINDS
    from app.catalog.sealed import reseal_catalog
    from app.graph import rotation
    from app.iac.state import reseal_hash_key, reseal_state_secrets, secret_key
    from app.webhooks.store import reseal_secrets

    settings = _settings()
    crypto.use(crypto.Keyring(settings.encryption_key, settings.encryption_key_old))
    if settings.encryption_key is None:
        click.echo(
            "infragraph: INFRAGRAPH_ENCRYPTION_KEY is unset: state is stored in clear "
            "(what is sealed is opened)",
            err=True,
        )

    def progress(state: str, counts: dict[str, int]) -> None:
        done = ", ".join(f"{count} {kind}" for kind, count in counts.items() if count)
        click.echo(f"{state}: {done}", err=True)

    async def run() -> rotation.Rotated:
        conn = await asyncpg.connect(db.database_url(settings))
        try:
            await db.init_connection(conn)
            await db.migrate(conn)
            done = await rotation.rotate(conn, progress)
            done.counts["iac key"] = await reseal_hash_key(conn)
            async with conn.transaction():
                done.counts["catalog"] = await reseal_catalog(conn, list(RESOURCE_KINDS.values()))
                key = await secret_key(conn, settings.secret_key)
                done.counts["iac state"] = await reseal_state_secrets(conn, key)
            done.counts["webhook secrets"] = await reseal_secrets(conn)
            return done
        finally:
            await conn.close()

    try:
        done = asyncio.run(run())
    except (OSError, asyncpg.PostgresError, crypto.UnknownKey) as exc:
        _fail(Refused([f"rotate-key: {exc}"]))
    summary = ", ".join(f"{count} {kind}" for kind, count in done.counts.items())
    click.echo(f"re-sealed {done.states} state(s): {summary}", err=True)


# --- Terraform states, through the API --------------------------------------------------


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


@main.command("import", help="Import a Terraform v4 state file as the state's next version.")
@click.argument("name")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def import_state(name: str, file: Path) -> None:
    try:
        written = _client().state("POST", name, _upload(file))
    except Refused as error:
        _fail(error)
    verb = "imported" if written["created"] else "already stored"
    click.echo(f"{verb}: {name} serial {written['serial']}", err=True)


@main.command(help="Print a state rendered from its normalized rows (current or --serial).")
@click.argument("name")
@click.option("--serial", type=int, help="A version's serial (default: the current one).")
def export(name: str, serial: int | None) -> None:
    document = _ask(EXPORT_STATE, {"name": name, "serial": serial}, "exportState")
    sys.stdout.buffer.write(jsonutil.dumps(document, indent=True))


@main.command(help="List the states: name, kind, current serial, lock holder.")
@click.option("--prefix", help="Only names starting with it.")
@JSON_OUTPUT
def states(prefix: str | None, as_json: bool) -> None:
    found, after = [], None
    while True:
        page = _ask(STATES, {"first": 1000, "after": after, "prefix": prefix}, "states")
        found += [edge["node"] for edge in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    if as_json:
        click.echo(_json(found))
        return
    for state in found:
        version = state["currentVersion"]
        serial = f"serial {version['serial']}" if version else "no version"
        lock = state["lock"]
        held = f"  locked by {lock['who'] or '?'} ({lock['id']})" if lock else ""
        click.echo(f"{state['name']}  {state['kind'].lower()}  {serial}{held}")


PRUNE = """mutation($states: String!, $keepLast: Int!, $keepDays: Float) {
  prune(states: $states, keepLast: $keepLast, keepDays: $keepDays) {
    state serials resources edges outputs chunks } }"""


@main.command(
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
    pruned = _ask(PRUNE, variables, "prune")
    if as_json:
        click.echo(_json(pruned))
        return
    for state in pruned:
        click.echo(
            f"{state['state']}: pruned serials {', '.join(map(str, state['serials']))} "
            f"({state['resources']} resources, {state['edges']} edges, "
            f"{state['outputs']} outputs, {state['chunks']} chunks)"
        )
    if not pruned:
        click.echo(f"nothing to prune in states matching {states!r}")


@main.command(help="Lock a state as Terraform does; prints the lock ID (for unlock).")
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
        _client().state("LOCK", name, jsonutil.dumps(info))
    except Refused as error:
        _fail(error)
    click.echo(info["ID"])


def _unlock(name: str, body: bytes) -> None:
    try:
        done = _client().state("UNLOCK", name, body)
    except Refused as error:
        _fail(error)
    click.echo(f"unlocked: {name}" if done["unlocked"] else f"{name} was not locked", err=True)


@main.command(help="Release a lock this holder took (its lock ID).")
@click.argument("name")
@click.argument("lock_id")
def unlock(name: str, lock_id: str) -> None:
    _unlock(name, jsonutil.dumps({"ID": lock_id, "Operation": "infragraph unlock"}))


@main.command("force-unlock", help="Release whoever's lock on a state (recorded as forced).")
@click.argument("name")
def force_unlock(name: str) -> None:
    _unlock(name, b"")


# --- declarative IaC, through the API ---------------------------------------------------


@main.command(help="What applying an IaC document would change; ends with its hash.")
@SCOPE
@DOCUMENT
@JSON_OUTPUT
@click.option(
    "--detailed-exitcode", is_flag=True, help="Exit 2 when the plan changes something, else 0."
)
def plan(scope: str, file: str, as_json: bool, detailed_exitcode: bool) -> None:
    planned = _ask(PLAN, {"scope": scope, "document": _text(_read(file))}, "plan")
    click.echo(_json(planned) if as_json else render_plan(planned), nl=as_json)
    if detailed_exitcode and _changes_anything(planned["summary"]):
        sys.exit(2)


@main.command(help="Apply the reviewed plan of a document (refused if anything changed since).")
@SCOPE
@click.option("--hash", "plan_hash", required=True, help="The hash the reviewed plan printed.")
@DOCUMENT
@JSON_OUTPUT
def apply(scope: str, plan_hash: str, file: str, as_json: bool) -> None:
    variables = {"scope": scope, "document": _text(_read(file)), "hash": plan_hash}
    applied = _ask(APPLY, variables, "apply")
    _report(
        applied,
        as_json,
        f"applied: {applied['stateName']} serial {applied['version']['serial']}",
        f"summary: {_counts(applied['summary'])}",
    )


@main.command("export-iac", help="Print a system's share of a scope as an IaC document.")
@SCOPE
@SYSTEM
def export_iac(scope: str, system: str) -> None:
    click.echo(_ask(EXPORT_IAC, {"scope": scope, "system": system}, "export"), nl=False)


@main.command(help="Stop managing refs (a table with its sub-resources); they stay live.")
@SCOPE
@SYSTEM
@click.argument("refs", nargs=-1, required=True)
@JSON_OUTPUT
def release(scope: str, system: str, refs: tuple[str, ...], as_json: bool) -> None:
    variables = {"scope": scope, "system": system, "refs": list(refs)}
    released = _ask(RELEASE, variables, "release")
    _report(
        released,
        as_json,
        f"released: {', '.join(released['released'])}",
        f"recorded: {released['stateName']} serial {released['version']['serial']}",
    )


# --- policies: saved checks on every write ------------------------------------------------

POLICY = "name severity resourceType states provider condition enforce"
CREATE_POLICY = f"""mutation($input: CreatePolicyInput!) {{
  createPolicy(input: $input) {{ {POLICY} }}
}}"""
DELETE_POLICY = f"mutation($name: String!) {{ deletePolicy(name: $name) {{ {POLICY} }} }}"
POLICIES = f"""query($first: Int!, $after: String) {{
  policies(first: $first, after: $after) {{
    edges {{ node {{ {POLICY} }} }} pageInfo {{ hasNextPage endCursor }}
  }}
}}"""
OPEN_VIOLATIONS = "query($policy: String!) { violations(policy: $policy) { totalCount } }"


def _open_violations(name: str) -> int:
    count: int = _ask(OPEN_VIOLATIONS, {"policy": name}, "violations")["totalCount"]
    return count


@main.group(help="Saved checks run on every write of the states they cover.")
def policy() -> None:
    pass


@policy.command("create", help="Save a policy and evaluate it over every current version.")
@click.argument("name")
@click.option("--type", "resource_type", required=True, help="A glob over resource types.")
@click.option(
    "--condition", required=True, help='A SQL/JSON path predicate: $.acl == "public-read".'
)
@click.option("--severity", type=click.Choice(["info", "warning", "critical"]), default="warning")
@click.option("--states", help="A glob over state names (default: every state).")
@click.option("--provider", help="A glob over provider addresses (default: any).")
@click.option("--description", default="")
@click.option("--enforce", is_flag=True, help="Refuse IaC applies that would violate it.")
def policy_create(
    name: str,
    resource_type: str,
    condition: str,
    severity: str,
    states: str | None,
    provider: str | None,
    description: str,
    enforce: bool,
) -> None:
    given = {
        "name": name,
        "resourceType": resource_type,
        "condition": condition,
        "severity": severity.upper(),
        "states": states,
        "provider": provider,
        "description": description,
        "enforce": enforce,
    }
    _ask(CREATE_POLICY, {"input": given}, "createPolicy")
    click.echo(f"created: {name} ({_open_violations(name)} open)")


@policy.command("list", help="The policies: name, severity, scope, condition, open violations.")
@JSON_OUTPUT
def policy_list(as_json: bool) -> None:
    found, after = [], None
    while True:
        page = _ask(POLICIES, {"first": 1000, "after": after}, "policies")
        found += [edge["node"] for edge in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    for each in found:
        each["openViolations"] = _open_violations(each["name"])
    if as_json:
        click.echo(_json(found))
        return
    for each in found:
        scope = " ".join(
            f"{key}={each[key]}"
            for key in ("resourceType", "states", "provider")
            if each[key] is not None
        )
        enforce = " enforce" if each["enforce"] else ""
        click.echo(
            f"{each['name']}\t{each['severity'].lower()}{enforce}\t{scope}\t"
            f"{each['condition']}\t{each['openViolations']} open"
        )


@policy.command("delete", help="Delete a policy and its violations.")
@click.argument("name")
def policy_delete(name: str) -> None:
    _ask(DELETE_POLICY, {"name": name}, "deletePolicy")
    click.echo(f"deleted: {name}")


# --- API tokens (admin), through the API ------------------------------------------------

TOKEN_FIELDS = "name role states scopes createdBy createdAt expiresAt revokedAt lastUsedAt"
CREATE_TOKEN = f"""mutation($name: String!, $role: Role!, $states: [String!], $scopes: [String!],
                   $expiresDays: Float) {{
  createToken(name: $name, role: $role, states: $states, scopes: $scopes,
              expiresDays: $expiresDays) {{ token {{ {TOKEN_FIELDS} }} secret }}
}}"""
TOKENS = f"{{ tokens {{ {TOKEN_FIELDS} }} }}"
REVOKE_TOKEN = f"mutation($name: String!) {{ revokeToken(name: $name) {{ {TOKEN_FIELDS} }} }}"


@main.group(help="API tokens: who may do what (README, Access control). Admin only.")
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
    created = _ask(CREATE_TOKEN, variables, "createToken")
    made = created["token"]
    expiry = f", expires {made['expiresAt']}" if made["expiresAt"] else ""
    click.echo(f"created: {name} ({role}, {_reach(made)}{expiry}); the token, shown only now:")
    click.echo(created["secret"])


@token.command("list", help="The tokens (never their secrets): name, role, reach, last use.")
@JSON_OUTPUT
def token_list(as_json: bool) -> None:
    found = _ask(TOKENS, {}, "tokens")
    if as_json:
        click.echo(_json(found))
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
    _ask(REVOKE_TOKEN, {"name": name}, "revokeToken")
    click.echo(f"revoked: {name}")


# Command groups in modules of their own (they use the helpers above).
from app import cli_access  # noqa: E402, F401 (whoami, output readers: commands of `main`)
from app.webhook_cli import webhook  # noqa: E402

main.add_command(webhook)
from app import impact_cli  # noqa: E402, F401 (impact: a command of `main`)
