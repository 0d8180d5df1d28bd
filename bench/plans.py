"""The Terraform plan case: a plan changing 1,000 instances of a 20,000-instance state
(Terraform's closed dependency lists), analysed over HTTP (POST /states/{name}/plans:
submit to summary, impact and findings), against reading the plan's JSON (as the server
reads it: app.plans.document) and the bare recursive CTE of the blast radius over the
same roots. Its notes split the CPU a request takes between the server process and
PostgreSQL (on this machine), a figure a loaded machine changes less than the time."""

import os
import time
from typing import Any

from app.graph import edges
from app.jsonutil import dumps
from app.plans.document import read_plan
from bench.cases import BenchError, Env
from bench.generate import generate_state
from bench.harness import Result, alternate

STATE = "bench/planned"
CHANGED = 1000
JSON = {"Content-Type": "application/json"}


def _cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) process `pid` has used (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _backends(env: Env) -> dict[int, float] | None:
    """The CPU time each PostgreSQL backend of the bench's database has used, by pid; None
    when the server is not on this machine (its processes are not to be seen here)."""
    async with env.pool.acquire() as conn:
        pids = await conn.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        )
        local = await conn.fetchval("SELECT inet_server_addr() <<= '127.0.0.0/8'::inet")
    return _cpu_of([r["pid"] for r in pids]) if local else None


def _cpu_of(pids: list[int]) -> dict[int, float] | None:
    """The CPU time of each of `pids` still running, when they are postgres processes of
    this machine (None: they are not to be seen here)."""
    found = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/comm") as comm:
                if comm.read().strip() != "postgres":
                    return None
        except OSError:
            continue  # ended since, or not here
        found[pid] = _cpu_seconds(pid)
    return found if found else None


def _spent(before: dict[int, float] | None, after: dict[int, float] | None) -> float | None:
    """The CPU time the backends used between two readings (those opened since too)."""
    if before is None or after is None:
        return None
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


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

    # the CPU split of each request: the server process, PostgreSQL's backends
    # and this process (the client: sending the plan, reading the answer)
    cpu: list[tuple[float, float | None, float]] = []

    async def candidate() -> None:
        backends = await _backends(env)
        started, client = _cpu_seconds(env.server_pid), time.process_time()
        answer = await env.http.post(f"/states/{STATE}/plans", content=body, headers=JSON)
        if answer.status_code != 201:
            raise BenchError(f"plan: {answer.status_code} {answer.text[:300]}")
        reports.append(answer.json())
        client = time.process_time() - client
        server = _cpu_seconds(env.server_pid) - started
        cpu.append((server, _spent(backends, await _backends(env)), client))

    async def baseline() -> None:
        parsed, _ = read_plan(body)
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
    server_cpu, database_cpu, client_cpu = min(cpu, key=lambda c: c[0])
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
            # what a loaded machine changes least: the CPU a request takes, in the server
            # process and in PostgreSQL (the fastest request's), and the load it ran at
            "server_cpu_s": round(server_cpu, 2),
            "postgres_cpu_s": None if database_cpu is None else round(database_cpu, 2),
            "client_cpu_s": round(client_cpu, 2),
            "load": round(os.getloadavg()[0], 1),
        },
    )


PLANS_GROUP = (plan_impact_case,)
