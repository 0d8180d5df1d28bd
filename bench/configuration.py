"""The configuration graph case: `modules(source:)` over the latest configurations of 200
states (FULL) with 20 module calls each, a quarter of them of the source asked for,
over GraphQL, against the bare SQL reading the same rows."""

from typing import Any

from app.configuration.parse import parse_configuration
from app.configuration.store import PUSH, record_configuration
from bench.cases import BenchError, Env, graphql
from bench.harness import Result, alternate
from tests.helpers.states import resource, state

CALLS = 20
SOURCE = "terraform-aws-modules/vpc/aws"
QUERY = """query($source: String!) { modules(source: $source, first: 1000) {
  state key versionConstraint } }"""
JSON = {"Content-Type": "application/json"}


def _section(n: int) -> dict[str, Any]:
    """CALLS module calls, every fourth of SOURCE."""
    calls = {
        f"m{i}": {
            "source": SOURCE if i % 4 == 0 else f"app/module-{i}/aws",
            "version_constraint": f"~> {n % 5}.{i}",
            "module": {"resources": []},
        }
        for i in range(CALLS)
    }
    return {"root_module": {"module_calls": calls, "resources": []}}


async def modules_case(env: Env) -> Result:
    states = min(200, env.size.dashboard_states)  # 200 (FULL)
    for n in range(states):
        name = f"bench/configured-{n:03}"
        body = state([resource("aws_vpc", "main", module="module.m0")])
        response = await env.http.post(f"/states/{name}", content=body, headers=JSON)
        if response.status_code != 200:
            raise BenchError(f"write: {response.status_code} {response.text[:300]}")
        async with env.pool.acquire() as conn:
            await record_configuration(
                conn, name, parse_configuration(_section(n)), origin=PUSH, submitter="bench"
            )
    async with env.pool.acquire() as conn:
        await conn.execute("ANALYZE configuration_modules, state_configurations")
    found: list[int] = []
    bare: list[int] = []

    async def candidate() -> None:
        data = await graphql(env, QUERY, source=SOURCE)
        found.append(len(data["modules"]))

    async def baseline() -> None:
        async with env.pool.acquire() as conn:
            rows = await conn.fetch(
                """SELECT s.name, m.key, m.version_constraint
                   FROM configuration_modules m
                   JOIN state_configurations sc ON sc.configuration_id = m.configuration_id
                   JOIN states s ON s.id = sc.state_id
                   WHERE m.source = $1 ORDER BY s.name, m.key LIMIT 1000""",
                SOURCE,
            )
        bare.append(len(rows))

    cand, base = await alternate(candidate, baseline, max(env.size.runs, 5))
    expected = min(1000, states * CALLS // 4)
    if found[-1] != expected or bare[-1] != expected:
        raise BenchError(f"modules: {found[-1]} calls found, {bare[-1]} bare, {expected} made")
    return Result(
        "configuration modules",
        f"modules(source:) over GraphQL: {states} states x {CALLS} calls, {expected} found",
        "the bare SQL of the same rows",
        cand,
        base,
        "<= 50 ms",
        cand <= 0.050,
        max(env.size.runs, 5),
        {"calls": expected},
    )


CONFIGURATION_GROUP = (modules_case,)
