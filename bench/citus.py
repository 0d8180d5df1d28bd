"""The citus group: the same requests to a server on a Citus cluster (a coordinator and two
workers) and to one on a single node (the group's database), alternated. The cluster's
coordinator is INFRAGRAPH_TEST_CITUS_URL (docs/scaling.md, Tests, says how to start one);
the group refuses to run without it."""

import contextlib
import itertools
import os
from collections.abc import AsyncIterator

from app.jsonutil import dumps
from bench.cases import BenchError, Env, _changed, _ok
from bench.generate import generate_state
from bench.harness import Result, alternate
from bench.http import Client
from tests.citus_cluster import CITUS_URL, cluster_database
from tests.live_server import live_server


@contextlib.asynccontextmanager
async def _cluster_server() -> AsyncIterator[Client]:
    url = os.environ.get(CITUS_URL)
    if not url:
        raise BenchError(f"the citus group needs a cluster: {CITUS_URL} is unset")
    async with cluster_database(url) as database:
        with live_server(database, {"INFRAGRAPH_API_TOKENS": None}, timeout=120) as server:
            client = Client(server.url, connections=8)
            try:
                yield client
            finally:
                await client.aclose()


async def citus_import_case(env: Env) -> Result:
    """A new state POSTed to the cluster, against the same POST to a single node."""
    body = dumps(generate_state(env.size.import_instances))
    names = (f"bench/citus-import-{n}" for n in itertools.count())
    async with _cluster_server() as cluster:
        # untimed: a fresh cluster server's first write opens its connections to the shards
        _ok(await cluster.post("/states/bench/citus-warm", content=body))
        _ok(await env.http.post("/states/bench/citus-warm", content=body))

        async def candidate() -> None:
            _ok(await cluster.post(f"/states/{next(names)}", content=body))

        async def baseline() -> None:
            _ok(await env.http.post(f"/states/{next(names)}", content=body))

        cand, base = await alternate(candidate, baseline, env.size.runs)
    assert base is not None
    return Result(
        "citus, import",
        f"POST a {env.size.import_instances:,}-instance state to a 3-node Citus cluster",
        "the same POST to a single node",
        cand,
        base,
        "ratio <= 2.0",
        cand / base <= 2.0,
        env.size.runs,
    )


async def citus_change_case(env: Env) -> Result:
    """A one-attribute change POSTed to a big state on the cluster, against the same
    change on a single node."""
    document = generate_state(env.size.import_instances)
    body = dumps(document)
    changes = {serial: _changed(document, serial) for serial in range(2, 2 + env.size.runs)}
    async with _cluster_server() as cluster:
        _ok(await cluster.post("/states/bench/citus-changed", content=body))
        _ok(await env.http.post("/states/bench/citus-changed", content=body))
        on_cluster, on_node = itertools.count(2), itertools.count(2)

        async def candidate() -> None:
            change = changes[next(on_cluster)]
            _ok(await cluster.post("/states/bench/citus-changed", content=change))

        async def baseline() -> None:
            _ok(await env.http.post("/states/bench/citus-changed", content=changes[next(on_node)]))

        cand, base = await alternate(candidate, baseline, env.size.runs)
    assert base is not None
    return Result(
        "citus, change",
        f"POST a 1-attribute change to a {env.size.import_instances:,}-instance state "
        "on a 3-node Citus cluster",
        "the same change on a single node",
        cand,
        base,
        "ratio <= 2.0",
        cand / base <= 2.0,
        env.size.runs,
    )


CITUS_GROUP = [citus_import_case, citus_change_case]
