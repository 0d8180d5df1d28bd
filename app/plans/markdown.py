"""A plan as Markdown for a pull request: deterministic for the same plan and graph,
at most MAX_CHARS characters (long lists end "and N more")."""

from collections import Counter
from typing import Any

import asyncpg

from app.plans.impact import Member, plan_impact
from app.plans.store import Plan, stale_consumers

MAX_CHARS = 60_000
_LISTED = 50  # items per list before "and N more"


def _listed(lines: list[str], limit: int = _LISTED) -> list[str]:
    if len(lines) <= limit:
        return lines
    return [*lines[:limit], f"- and {len(lines) - limit} more"]


def _members(members: list[Member], limit: int = _LISTED) -> list[str]:
    """As _listed, the members' lines, written for those listed only (there may be
    tens of thousands)."""
    lines = [f"- `{m.state}` `{m.address}` (depth {m.depth})" for m in members[:limit]]
    if len(members) > limit:
        lines.append(f"- and {len(members) - limit} more")
    return lines


def render(
    analysis: dict[str, Any],
    *,
    state: str,
    stale: bool,
    members: list[Member],
    consumers: list[dict[str, Any]],
) -> str:
    """The Markdown of a plan (pure)."""
    summary = analysis["summary"]
    out = [f"## Plan for `{state}`", ""]
    if stale:
        out += ["> **Stale**: the state changed since this plan's prior state.", ""]
    counts = ", ".join(f"{k.lower()}: {summary[k]}" for k in sorted(summary)) or "no changes"
    out += [f"**Changes**: {counts}", ""]
    gone = [c for c in analysis["changes"] if c["action"] in ("REPLACE", "DELETE")]
    if gone:
        out += ["### Replaced and deleted", ""]
        out += _listed([f"- `{c['address']}`: {c['action'].lower()}" for c in gone])
        out.append("")
    if members:
        out += ["### Impact", ""]
        by_state = Counter(m.state for m in members)
        out += _listed([f"- `{s}`: {n} resources" for s, n in sorted(by_state.items())])
        out.append("")
        out += _members(members)
        out.append("")
    if consumers:
        out += ["### Stale consumers", ""]
        out += _listed(
            [f"- `{c['consumer']}` `{c['address']}` reads `{c['output']}`" for c in consumers]
        )
        out.append("")
    findings = analysis["findings"]
    if findings:
        out += ["### Policy findings", ""]
        out += _listed(
            [
                f"- {'would open' if f['opened'] else 'would resolve'} **{f['policy']}** "
                f"({f['severity']}{', enforced' if f['enforce'] else ''}) on `{f['address']}`"
                for f in findings
            ]
        )
        out.append("")
    text = "\n".join(out)
    if len(text) > MAX_CHARS:
        cut = text[: MAX_CHARS - 40].rsplit("\n", 1)[0]
        text = f"{cut}\n\n(and {len(text) - len(cut)} more characters)"
    return text


async def plan_markdown(conn: asyncpg.Connection, plan: Plan, *, readable: list[str] | None) -> str:
    members = await plan_impact(conn, plan, cross_states=True, readable=readable)
    consumers = await stale_consumers(conn, plan, readable=readable)
    return render(
        plan["analysis"],
        state=plan["state_name"],
        stale=plan["stale"],
        members=members,
        consumers=consumers,
    )
