"""Plans stored: read against the state's current version, listed, found by id."""

import dataclasses
import uuid
from collections.abc import Mapping
from typing import Any
from uuid import UUID

import asyncpg

from app.errors import BadInput, NotFound
from app.graph.events import append_event
from app.graph.policy_previews import preview, preview_resolved
from app.graph.queries import valid_at
from app.plans.parse import PLANNED, REACHING, Action, Change, ParsedPlan

SUBMITTED = "plan-submitted"  # the event action
_REACHING = frozenset(a.name for a in REACHING)
Plan = Mapping[str, Any] | asyncpg.Record  # a stored plan: get_plan's columns

_COLUMNS = """p.id, p.state_id, s.name AS state_name, p.base_version_id, p.base_serial,
    p.stale, p.submitter, p.analysis, p.created_at"""


def _change(c: Change) -> dict[str, Any]:
    """What is kept of an instance's change (its planned values are not: policies read
    them at submission)."""
    return {
        "address": c.address,
        "action": c.action.name,
        "mode": c.mode,
        "type": c.type,
        "provider": c.provider,
        "previous_address": c.previous_address,
        "importing": c.importing,
        "deposed": c.deposed,
        "reason": c.reason,
        "attributes": [
            {"path": a.path, "before": a.before, "after": a.after, "sensitive": a.sensitive}
            for a in c.attributes
        ],
        "more_attributes": c.more_attributes,
    }


def analysis_of(parsed: ParsedPlan) -> dict[str, Any]:
    """What is kept of a plan: its changes, outputs and drift (masked), and its summary."""
    return {
        "format_version": parsed.format_version,
        "terraform_version": parsed.terraform_version,
        "changes": [_change(c) for c in parsed.changes],
        "output_changes": [
            {
                "name": o.name,
                "action": o.action.name,
                "before": o.before,
                "after": o.after,
                "sensitive": o.sensitive,
            }
            for o in parsed.output_changes
        ],
        "drift": [_change(c) for c in parsed.drift],
        "summary": parsed.summary(),
    }


async def _current_ids(conn: asyncpg.Connection, state_id: UUID, serial: int) -> dict[str, Any]:
    """The managed instances of a version: address -> its `id` attribute."""
    records = await conn.fetch(
        f"""SELECT r.address, r.attributes->>'id' AS id FROM resources r
            WHERE {valid_at("r")} AND r.mode = 'managed'""",
        state_id,
        serial,
    )
    return {r["address"]: r["id"] for r in records}


def is_stale(prior: dict[str, Any], current: dict[str, Any]) -> bool:
    """Whether the plan's prior state differs from the state's current version: other
    instances, or an instance with another id (replaced since)."""
    if set(prior) != set(current):
        return True
    return any(
        isinstance(values, dict) and "id" in values and values["id"] != current[address]
        for address, values in prior.items()
    )


async def submit_plan(
    conn: asyncpg.Connection, state_name: str, parsed: ParsedPlan, *, submitter: str
) -> Plan:
    """Store a plan of state `state_name` against its current version; BadInput when the
    plan's prior state shares no instance with it (the plan of another state)."""
    state = await conn.fetchrow("SELECT id FROM states WHERE name = $1", state_name)
    if state is None:
        raise NotFound(f"no state {state_name!r}")
    version = await conn.fetchrow(
        """SELECT id, serial FROM state_versions WHERE state_id = $1
           ORDER BY serial DESC LIMIT 1""",
        state["id"],
    )
    current = await _current_ids(conn, state["id"], version["serial"]) if version else {}
    if parsed.prior and current and not set(parsed.prior) & set(current):
        raise BadInput(
            f"the plan's prior state is of another lineage: no instance of it is in "
            f"state {state_name!r}"
        )
    serial: int | None = version["serial"] if version else None
    plan_id = uuid.uuid4()
    analysis = analysis_of(parsed)
    analysis["findings"] = [
        dataclasses.asdict(f) for f in await _findings(conn, state_name, parsed)
    ]
    row = {
        "id": plan_id,
        "state_id": state["id"],
        "state_name": state_name,
        "base_version_id": version and version["id"],
        "base_serial": serial,
        "stale": is_stale(parsed.prior, current),
        "submitter": submitter,
        "analysis": analysis,
    }
    async with conn.transaction():
        row["created_at"] = await conn.fetchval(
            """INSERT INTO terraform_plans
                   (id, state_id, base_version_id, base_serial, stale, submitter, analysis)
               VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING created_at""",
            *(row[k] for k in ("id", "state_id", "base_version_id", "base_serial")),
            *(row[k] for k in ("stale", "submitter", "analysis")),
        )
        await append_event(
            conn,
            state_name=state_name,
            action=SUBMITTED,
            actor=submitter,
            state_id=state["id"],
            serial=serial,
            detail={"plan": str(plan_id), "summary": analysis["summary"]},
        )
    return row  # as get_plan reads it back, without reading the analysis back


async def _findings(conn: asyncpg.Connection, state_name: str, parsed: ParsedPlan) -> list[Any]:
    """The policy violations the plan would open (on the planned values of created,
    updated and replaced instances) and the open ones it would resolve (on instances it
    deletes or forgets, or whose planned values no longer match), by address."""
    planned = [
        {"address": c.address, "type": c.type, "provider": c.provider, "attributes": c.after}
        for c in parsed.changes
        if c.mode == "managed"
        and c.action in PLANNED
        and not c.deposed
        and isinstance(c.after, dict)
    ]
    gone = [
        c.address
        for c in parsed.changes
        if c.mode == "managed" and c.action in (Action.DELETE, Action.FORGET) and not c.deposed
    ]
    opened = await preview(conn, state_name, planned) if planned else []
    resolved = await preview_resolved(conn, state_name, planned, gone) if planned or gone else []
    return sorted([*opened, *resolved], key=lambda f: (f.address, f.policy, not f.opened))


async def get_plan(
    conn: asyncpg.Connection, plan_id: UUID, *, readable: list[str] | None = None
) -> asyncpg.Record:
    record = await conn.fetchrow(
        f"""SELECT {_COLUMNS} FROM terraform_plans p JOIN states s ON s.id = p.state_id
            WHERE p.id = $1 AND may_read(s.name, $2::text[])""",
        plan_id,
        readable,
    )
    if record is None:
        raise NotFound(f"no plan {plan_id}")
    return record


async def plans_by_id(
    conn: asyncpg.Connection, plan_ids: list[UUID], *, readable: list[str] | None = None
) -> dict[UUID, asyncpg.Record]:
    """The plans of `plan_ids` there are (of states `readable`), by id."""
    records = await conn.fetch(
        f"""SELECT {_COLUMNS} FROM terraform_plans p JOIN states s ON s.id = p.state_id
            WHERE p.id = ANY($1::uuid[]) AND may_read(s.name, $2::text[])""",
        plan_ids,
        readable,
    )
    return {r["id"]: r for r in records}


async def list_plans(
    conn: asyncpg.Connection, state_name: str, *, limit: int, readable: list[str] | None = None
) -> list[asyncpg.Record]:
    """A state's plans, newest first."""
    return await conn.fetch(
        f"""SELECT {_COLUMNS} FROM terraform_plans p JOIN states s ON s.id = p.state_id
            WHERE s.name = $1 AND may_read(s.name, $2::text[])
            ORDER BY p.created_at DESC, p.id DESC LIMIT $3""",
        state_name,
        readable,
        limit,
    )


def impact_addresses(changes: list[dict[str, Any]]) -> list[str]:
    """The addresses of the instances a plan's (stored) changes update, replace or
    delete: the roots of its impact (app.plans.impact)."""
    return [
        c["address"]
        for c in changes
        if c["action"] in _REACHING and c["mode"] == "managed" and not c["deposed"]
    ]


def parsed_impact_addresses(parsed: ParsedPlan) -> list[str]:
    """impact_addresses of a plan as parsed, by address."""
    return [
        c.address
        for c in parsed.changes
        if c.action in REACHING and c.mode == "managed" and not c.deposed
    ]


async def current_version(conn: asyncpg.Connection, state_name: str) -> UUID | None:
    """The id of the current version of state `state_name` (None: it has none)."""
    found: UUID | None = await conn.fetchval(
        """SELECT v.id FROM states s JOIN state_versions v ON v.state_id = s.id
           WHERE s.name = $1 ORDER BY v.serial DESC LIMIT 1""",
        state_name,
    )
    return found


async def stale_consumers(
    conn: asyncpg.Connection, plan: Plan, *, readable: list[str] | None = None
) -> list[dict[str, Any]]:
    """The consumer states (readable) whose remote state reads an output the plan changes:
    one row per consumer, data source and output, with the output's old and new value."""
    changed = {o["name"]: o for o in plan["analysis"]["output_changes"] if o["action"] != "NO_OP"}
    if not changed:
        return []
    records = await conn.fetch(
        """SELECT c.name AS consumer, l.address, o.name AS output
           FROM state_links l JOIN states c ON c.id = l.state_id
           CROSS JOIN LATERAL jsonb_object_keys(l.outputs) AS o (name)
           WHERE l.producer_name = $1 AND l.serial_to IS NULL
             AND o.name = ANY($2::text[]) AND may_read(c.name, $3::text[])
           ORDER BY c.name, l.address, o.name""",
        plan["state_name"],
        sorted(changed),
        readable,
    )
    return [
        {
            "consumer": r["consumer"],
            "address": r["address"],
            "output": r["output"],
            "before": changed[r["output"]]["before"],
            "after": changed[r["output"]]["after"],
            "sensitive": changed[r["output"]]["sensitive"],
        }
        for r in records
    ]
