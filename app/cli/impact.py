"""`infragraph impact --state NAME plan.json`: what a Terraform plan touches, from the
server's graph (POST /states/{name}/plans). Exit 0, or 1 when a finding is at or above
--fail-on (or the server refuses), 2 usage."""

import sys
from typing import Any

import click

from app.cli.common import client, fail, json_text, read
from app.client import Refused
from app.plans.report import SEVERITIES, worst


def render_text(report: dict[str, Any]) -> str:
    summary = report["summary"]
    counts = ", ".join(f"{k.lower()} {summary[k]}" for k in sorted(summary)) or "no changes"
    lines = [f"plan {report['id']} of {report['state']}: {counts}"]
    if report["stale"]:
        lines.append("stale: the state changed since the plan's prior state")
    for change in report["changes"]:
        if change["action"] != "NO_OP":
            lines.append(f"  {change['action'].lower():8} {change['address']}")
    if report["impact"]:
        lines.append(f"impact: {len(report['impact'])} resources")
        for m in report["impact"]:
            lines.append(f"  {m['state']} {m['address']} (depth {m['depth']})")
    for c in report["staleConsumers"]:
        lines.append(f"stale consumer: {c['consumer']} {c['address']} reads {c['output']}")
    for f in report["violations"]:
        verb = "would open" if f["opened"] else "would resolve"
        enforced = ", enforced" if f["enforce"] else ""
        lines.append(f"policy {f['policy']} ({f['severity']}{enforced}) {verb} on {f['address']}")
    return "\n".join(lines)


@click.command(help="What a Terraform plan (`terraform show -json`) changes, reaches, breaks.")
@click.option("--state", "state", required=True, help="The state the plan is of.")
@click.argument("file")
@click.option("--format", "form", type=click.Choice(["text", "markdown", "json"]), default="text")
@click.option(
    "--fail-on",
    type=click.Choice(["warning", "critical"]),
    help="Exit 1 when a finding is at least this severe (an enforced policy: critical).",
)
def impact(state: str, file: str, form: str, fail_on: str | None) -> None:
    try:
        report = client().state("POST", f"{state}/plans", read(file))
    except Refused as error:
        fail(error)
    if form == "json":
        click.echo(json_text(report))
    elif form == "markdown":
        click.echo(report["markdown"])
    else:
        click.echo(render_text(report))
    found = worst(report)
    if fail_on and found and SEVERITIES.index(found) >= SEVERITIES.index(fail_on):
        sys.exit(1)
