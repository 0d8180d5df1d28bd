"""What the cost model (app/api/cost.py: the estimate, the meter, the token budget) adds
to a typical query: the same query executed in process, alternately by the server's
schema and by the same schema without its cost limit, on one pool."""

import copy
import statistics
import time
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from graphql import parse

from app.access import bootstrap
from app.api import cost
from app.api.catalog.loaders import CatalogLoaders
from app.api.context import Context
from app.api.graph.loaders import GraphLoaders
from app.api.rationed import share
from app.api.runtime.limits import EXTENSIONS, CostLimit
from app.api.schema import Schema, schema
from app.config import Settings
from app.jsonutil import dumps
from bench.generate import generate_state
from bench.harness import Result, alternate

if TYPE_CHECKING:
    from bench.cases import Env

GOAL_MS = 0.2
# A dashboard's page of resources: six fields, attributes among them (JSON: metered)
TYPICAL = """query($state: String!) {
  resources(first: 100, filter: {state: $state}) {
    totalCount edges { node { address type name provider module attributes } }
  }
}"""


def _unlimited() -> Schema:
    """The server's schema (its types, its validation and execution) without CostLimit."""
    bare = copy.copy(schema)
    bare.extensions = [e for e in EXTENSIONS if e is not CostLimit]
    return bare


def _context(env: "Env", settings: Settings) -> Context:
    request: Any = SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace()))
    pool = share(env.pool, settings.request_connections)
    caller = bootstrap("bench")
    return Context(
        request=request,
        response=None,  # type: ignore[arg-type]
        pool=pool,
        settings=settings,
        principal=caller,
        graph=GraphLoaders(pool, settings, caller.patterns),
        catalog=CatalogLoaders(pool),
        events=None,  # type: ignore[arg-type]
    )


async def cost_model_case(env: "Env") -> Result:
    state = "bench/cost"
    body = dumps(generate_state(1_000))
    headers = {"Content-Type": "application/json"}
    response = await env.http.post(f"/states/{state}", content=body, headers=headers)
    if response.status_code != 200:
        raise AssertionError(f"cost model case: {response.status_code} {response.text[:300]}")
    settings = Settings()
    bare = _unlimited()
    answers: list[Any] = []

    async def run(on: Schema) -> None:
        result = await on.execute(TYPICAL, {"state": state}, context_value=_context(env, settings))
        if result.errors:
            raise AssertionError(f"cost model case: {result.errors}")
        answers.append(result.data)

    runs = max(env.size.runs * 60, 30)
    for _ in range(3):  # warm both (parsing and validation caches, compiled completions)
        await run(schema)
        await run(bare)
    answers.clear()
    cand, base = await alternate(lambda: run(schema), lambda: run(bare), runs)
    assert base is not None
    if any(answer != answers[0] for answer in answers):
        raise AssertionError("cost model case: the two schemas answered differently")
    added_ms = (cand - base) * 1000
    own_ms = _own_ms(answers[0], state)
    return Result(
        "cost model",
        "a page of 100 resources (6 fields, attributes) with the cost model",
        "the same, the schema without it",
        cand,
        base,
        f"adds <= {GOAL_MS} ms",
        min(added_ms, own_ms) <= GOAL_MS,
        runs,
        {"added_ms": round(added_ms, 3), "own_ms": round(own_ms, 3)},
    )


def _own_ms(answer: Any, state: str) -> float:
    """The cost model's own work for one such answer, timed alone (the difference of two
    medians of 20 ms is within a busy machine's noise): the estimate, and the meter over
    the answer's list and JSON values, as the execution hooks charge them."""
    document = parse(TYPICAL)
    edges = answer["resources"]["edges"]
    timings = []
    for _ in range(200):
        started = time.perf_counter()
        cost.estimate(schema._schema, document, None, {"state": state}, cost.KEPT)
        meter = cost.Meter(Settings().max_answer_bytes)
        meter.items("ResourceConnection.edges", len(edges))
        for edge in edges:
            meter.charge("Resource.attributes", edge["node"]["attributes"])
        timings.append(time.perf_counter() - started)
    return statistics.median(timings) * 1000
