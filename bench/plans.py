"""The Terraform plan case: a plan changing 1,000 instances of a 20,000-instance state
(Terraform's closed dependency lists), analysed over HTTP (POST /states/{name}/plans:
submit to summary, impact and findings), against reading the plan's JSON and the bare
recursive CTE of the blast radius over the same roots."""

import os
from typing import Any

from app.graph import edges
from app.jsonutil import dumps, read
from app.plans.parse import parse_plan
from bench.cases import BenchError, Env
from bench.generate import generate_state
from bench.harness import Result, alternate

STATE = "bench/planned"
CHANGED = 1000
JSON = {"Content-Type": "application/json"}


def _cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) process `pid` has used."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _instances(state: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(address, type, attributes) of each managed instance."""
    found = []
    for r in state["resources"]:
        module = f"{r['module']}." if r.get("module") else ""
        base = f"{module}{r['type']}.{r['name']}"
        for i in r["instances"]:
            key = i.get("index_key")
            suffix = "" if key is None else f"[{key}]" if isinstance(key, int) else f'["{key}"]'
            found.append((base + suffix, r["type"], i["attributes"]))
    return found


def plan_document(state: dict[str, Any], changed: int) -> dict[str, Any]:
    """A plan updating every (len / changed)th instance (a new tag), the rest no-op."""
    instances = _instances(state)
    step = max(1, len(instances) // changed)
    changes = []
    for n, (address, rtype, attributes) in enumerate(instances):
        after = (
            {**attributes, "tags": {"plan": "yes"}}
            if n % step == 0 and n // step < changed
            else attributes
        )
        changes.append(
            {
                "address": address,
                "mode": "managed",
                "type": rtype,
                "name": address.rsplit(".", 1)[1].split("[")[0],
                "provider_name": "registry.terraform.io/hashicorp/aws",
                "change": {
                    "actions": ["update"] if after is not attributes else ["no-op"],
                    "before": attributes,
                    "after": after,
                    "after_unknown": {},
                    "before_sensitive": {},
                    "after_sensitive": {},
                },
            }
        )
    prior = [
        {"address": a, "mode": "managed", "type": t, "values": v, "sensitive_values": {}}
        for a, t, v in instances
    ]
    return {
        "format_version": "1.2",
        "terraform_version": "1.9.8",
        "planned_values": {"root_module": {}},
        "resource_changes": changes,
        "output_changes": {},
        "prior_state": {"format_version": "1.0", "values": {"root_module": {"resources": prior}}},
    }


async def plan_impact_case(env: Env) -> Result:
    size = env.size.import_instances  # 20,000 (FULL)
    state = generate_state(size)
    response = await env.http.post(f"/states/{STATE}", content=dumps(state), headers=JSON)
    if response.status_code != 200:
        raise BenchError(f"import: {response.status_code} {response.text[:300]}")
    async with env.pool.acquire() as conn:
        await conn.execute("ANALYZE resources, resource_dependencies")
    changed = min(CHANGED, size // 20)
    body = dumps(plan_document(state, changed))
    reports: list[dict[str, Any]] = []
    bare: list[int] = []

    server_cpu: list[float] = []

    async def candidate() -> None:
        started = _cpu_seconds(env.server_pid)
        answer = await env.http.post(f"/states/{STATE}/plans", content=body, headers=JSON)
        server_cpu.append(_cpu_seconds(env.server_pid) - started)
        if answer.status_code != 201:
            raise BenchError(f"plan: {answer.status_code} {answer.text[:300]}")
        reports.append(answer.json())

    async def baseline() -> None:
        parsed = parse_plan(read(body))
        roots = [c.address for c in parsed.changes if c.action.name == "UPDATE"]
        async with env.pool.acquire() as conn:
            keys = await conn.fetch(
                """SELECT r.id, v.id AS version_id FROM states s
                   JOIN state_versions v ON v.state_id = s.id
                   JOIN resources r ON r.state_id = s.id AND r.serial_to IS NULL
                   WHERE s.name = $1 AND r.address = ANY($2::text[])
                   ORDER BY v.serial DESC""",
                STATE,
                roots,
            )
            rows = await conn.fetch(
                f"""WITH RECURSIVE {edges.walk_sql(edges.Direction.DEPENDENTS)}
                    SELECT x.id, b.depth, x.address, x.path FROM bfs b
                    CROSS JOIN LATERAL unnest(b.ids, b.addresses, b.paths)
                        AS x (id, address, path)
                    WHERE b.depth > 0""",
                [k["id"] for k in keys],
                [k["version_id"] for k in keys],
            )
        bare.append(len({r["id"] for r in rows}))

    cand, base = await alternate(candidate, baseline, env.size.runs)
    report = reports[-1]
    if report["summary"].get("UPDATE") != changed:
        raise BenchError(f"plan: summary {report['summary']}, {changed} updates planned")
    roots = {c["address"] for c in report["changes"] if c["action"] == "UPDATE"}
    members = {m["address"] for m in report["impact"]}
    if len(members | roots) < bare[-1] or not members:
        raise BenchError(f"plan: impact {len(members)}, the bare CTE reached {bare[-1]}")
    ratio = cand / base if base else 0.0
    return Result(
        "plan impact",
        f"POST /states/{{name}}/plans: {changed:,} updates of {size:,} instances, analysed",
        "read the plan JSON + the bare recursive CTE over the same roots",
        cand,
        base,
        "<= 2 s, ratio <= 3",
        cand <= 2.0 and ratio <= 3.0,
        env.size.runs,
        {
            "impact": len(members),
            "bare_reached": bare[-1],
            # what a loaded machine does not change: the server process's CPU per request
            "server_cpu_s": round(min(server_cpu), 2),
        },
    )


PLANS_GROUP = (plan_impact_case,)
