"""Declarative IaC through the API: plan, apply, export-iac, release."""

import sys
from typing import Any

import click

from app.cli.common import DOCUMENT, JSON_OUTPUT, SCOPE, SYSTEM, ask, json_text, read, report, text

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
            f"      {c['field']}: desired {json_text(c['desired'])}, last applied "
            f"{json_text(c['lastApplied'])}, live {json_text(c['live'])} ({c['reason']})"
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


@click.command(help="What applying an IaC document would change; ends with its hash.")
@SCOPE
@DOCUMENT
@JSON_OUTPUT
@click.option(
    "--detailed-exitcode", is_flag=True, help="Exit 2 when the plan changes something, else 0."
)
def plan(scope: str, file: str, as_json: bool, detailed_exitcode: bool) -> None:
    planned = ask(PLAN, {"scope": scope, "document": text(read(file))}, "plan")
    click.echo(json_text(planned) if as_json else render_plan(planned), nl=as_json)
    if detailed_exitcode and _changes_anything(planned["summary"]):
        sys.exit(2)


@click.command(help="Apply the reviewed plan of a document (refused if anything changed since).")
@SCOPE
@click.option("--hash", "plan_hash", required=True, help="The hash the reviewed plan printed.")
@DOCUMENT
@JSON_OUTPUT
def apply(scope: str, plan_hash: str, file: str, as_json: bool) -> None:
    variables = {"scope": scope, "document": text(read(file)), "hash": plan_hash}
    applied = ask(APPLY, variables, "apply")
    report(
        applied,
        as_json,
        f"applied: {applied['stateName']} serial {applied['version']['serial']}",
        f"summary: {_counts(applied['summary'])}",
    )


@click.command("export-iac", help="Print a system's share of a scope as an IaC document.")
@SCOPE
@SYSTEM
def export_iac(scope: str, system: str) -> None:
    click.echo(ask(EXPORT_IAC, {"scope": scope, "system": system}, "export"), nl=False)


@click.command(help="Stop managing refs (a table with its sub-resources); they stay live.")
@SCOPE
@SYSTEM
@click.argument("refs", nargs=-1, required=True)
@JSON_OUTPUT
def release(scope: str, system: str, refs: tuple[str, ...], as_json: bool) -> None:
    variables = {"scope": scope, "system": system, "refs": list(refs)}
    released = ask(RELEASE, variables, "release")
    report(
        released,
        as_json,
        f"released: {', '.join(released['released'])}",
        f"recorded: {released['stateName']} serial {released['version']['serial']}",
    )
