"""A plan's whole analysis as one JSON object: what POST /states/{name}/plans answers and
the CLI prints (`--format json`), and the findings' worst severity."""

from typing import Any

import asyncpg

from app.plans.impact import Member, plan_impact
from app.plans.markdown import render
from app.plans.store import Plan, stale_consumers

SEVERITIES = ("info", "warning", "critical")


def worst(report: dict[str, Any]) -> str | None:
    """The most severe finding: a violation the plan would open has its policy's severity
    (an enforced one's is critical), a stale consumer is a warning, one it would resolve
    is none; None when there is none."""
    found = {
        "critical" if f["enforce"] else f["severity"] for f in report["violations"] if f["opened"]
    }
    if report["staleConsumers"]:
        found.add("warning")
    ranked = [s for s in SEVERITIES if s in found]
    return ranked[-1] if ranked else None


async def plan_report(
    conn: asyncpg.Connection,
    plan: Plan,
    *,
    readable: list[str] | None,
    members: list[Member] | None = None,
) -> dict[str, Any]:
    """The report of a stored plan; `members`: its impact across states when already
    walked (plan_impact), else walked here."""
    if members is None:
        members = await plan_impact(conn, plan, cross_states=True, readable=readable)
    consumers = await stale_consumers(conn, plan, readable=readable)
    analysis = plan["analysis"]
    return {
        "id": str(plan["id"]),
        "state": plan["state_name"],
        "submitter": plan["submitter"],
        "createdAt": plan["created_at"].isoformat(),
        "baseSerial": plan["base_serial"],
        "stale": plan["stale"],
        "summary": analysis["summary"],
        "changes": analysis["changes"],
        "outputChanges": analysis["output_changes"],
        "drift": analysis["drift"],
        "impact": [
            {
                "state": m.state,
                "address": m.address,
                "depth": m.depth,
                "path": m.path,
                "pathStates": m.path_states,
                "via": m.via,
            }
            for m in members
        ],
        "staleConsumers": consumers,
        "violations": analysis["findings"],
        "blocked": any(f["enforce"] and f["opened"] for f in analysis["findings"]),
        "markdown": render(
            analysis,
            state=plan["state_name"],
            stale=plan["stale"],
            members=members,
            consumers=consumers,
        ),
    }
