"""The citus group: the same requests to a server on a Citus cluster (a coordinator and two
workers) and to one on a single node (the group's database), alternated. The cluster's
coordinator is INFRAGRAPH_TEST_CITUS_URL (docs/scaling.md, Tests, says how to start one);
the group refuses to run without it."""

import contextlib
import dataclasses
import itertools
import os
from collections.abc import AsyncIterator
from typing import Any

import asyncpg

from app.jsonutil import dumps
from bench.cases import (
    _ACROSS,
    _CROSS_QUERY,
    _LIST_QUERY,
    BenchError,
    Env,
    _across_documents,
    _changed,
    _ok,
)
from bench.generate import generate_state
from bench.harness import Result, alternate
from bench.http import Client
from tests.helpers.citus_cluster import CITUS_URL, cluster_database
from tests.helpers.live_server import live_server

# The cluster's three nodes share the machine with the single node: the group's states
# are of at most this many instances (the import and change cases) ...
INSTANCES = 2_000
# ... and the radius across states spans the full size's states, of at most this many.
CROSS_INSTANCES = 200


@contextlib.asynccontextmanager
async def _cluster(url: str | None = None) -> AsyncIterator[tuple[Client, str]]:
    url = url or os.environ.get(CITUS_URL)
    if not url:
        raise BenchError(f"the citus group needs a cluster: {CITUS_URL} is unset")
    async with cluster_database(url) as database:
        with live_server(database, {"INFRAGRAPH_API_TOKENS": None}, timeout=120) as server:
            client = Client(server.url, connections=8)
            try:
                yield client, database
            finally:
                await client.aclose()


@contextlib.asynccontextmanager
async def _cluster_server() -> AsyncIterator[Client]:
    async with _cluster() as (client, _):
        yield client


async def _graphql(client: Client, query: str, **variables: Any) -> dict[str, Any]:
    response = _ok(await client.post("/graphql", json={"query": query, "variables": variables}))
    body: dict[str, Any] = response.json()
    if "errors" in body:
        raise BenchError(f"GraphQL errors: {body['errors']}")
    data: dict[str, Any] = body["data"]
    return data


def _instances(env: Env) -> int:
    return min(env.size.import_instances, INSTANCES)


async def citus_import_case(env: Env) -> Result:
    """A new state POSTed to the cluster, against the same POST to a single node."""
    body = dumps(generate_state(_instances(env)))
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
        f"POST a {_instances(env):,}-instance state to a 3-node Citus cluster",
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
    document = generate_state(_instances(env))
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
        f"POST a 1-attribute change to a {_instances(env):,}-instance state "
        "on a 3-node Citus cluster",
        "the same change on a single node",
        cand,
        base,
        "ratio <= 2.0",
        cand / base <= 2.0,
        env.size.runs,
    )


_BLAST = """query($state: String!, $address: String!, $first: Int!) {
  blastRadius(state: $state, address: $address, first: $first) {
    totalCount pageInfo { hasNextPage endCursor }
    edges { node { depth path resource { address type } } } } }"""


async def _both(env: Env, cluster: Client, name: str, body: bytes) -> None:
    _ok(await cluster.post(f"/states/{name}", content=body))
    _ok(await env.http.post(f"/states/{name}", content=body))


async def citus_list_case(env: Env) -> Result:
    """resources(filter: {state}) of a state on the cluster, against a single node."""
    first = env.size.list_first
    body = dumps(generate_state(_instances(env)))
    seen: dict[str, Any] = {}
    async with _cluster_server() as cluster:
        await _both(env, cluster, "bench/citus-list", body)

        async def candidate() -> None:
            seen["cluster"] = await _graphql(
                cluster, _LIST_QUERY, state="bench/citus-list", first=first
            )

        async def baseline() -> None:
            seen["node"] = await _graphql(
                env.http, _LIST_QUERY, state="bench/citus-list", first=first
            )

        await candidate()  # untimed: the cluster server's connections to the shards
        cand, base = await alternate(candidate, baseline, env.size.runs)
    if seen["cluster"] != seen["node"]:
        raise BenchError("citus list: the cluster and the single node answered differently")
    assert base is not None
    return Result(
        "citus, list",
        f"resources(first: {first}) of a {_instances(env):,}-instance state, 6 fields, "
        "on a 3-node Citus cluster",
        "the same query to a single node",
        cand,
        base,
        "ratio <= 2.0",
        cand / base <= 2.0,
        env.size.runs,
    )


async def _forget(database: str) -> None:
    conn = await asyncpg.connect(database)
    try:
        await conn.execute("DELETE FROM blast_walk_rows")
        await conn.execute("DELETE FROM blast_walks")
    finally:
        await conn.close()


async def citus_blast_case(env: Env) -> Result:
    """The first page of a whole blast radius, none kept before (walked and kept), on
    the cluster against a single node."""
    document = generate_state(_instances(env))
    body = dumps(document)
    # three hubs (the first resources generated, most depended on)
    hubs = {r["name"]: f"{r['type']}.{r['name']}" for r in document["resources"]}
    roots = tuple(hubs[f"r{n}"] for n in range(3))
    seen: dict[str, Any] = {}
    async with _cluster() as (cluster, database):
        await _both(env, cluster, "bench/citus-blast", body)

        async def radii(client: Client, key: str) -> None:
            for address in roots:
                seen[key, address] = await _graphql(
                    client, _BLAST, state="bench/citus-blast", address=address, first=100
                )

        async def candidate() -> None:
            await radii(cluster, "cluster")

        async def baseline() -> None:
            await radii(env.http, "node")

        async def reset() -> None:
            await _forget(database)
            async with env.pool.acquire() as conn:
                await conn.execute("TRUNCATE blast_walks, blast_walk_rows")

        await candidate()  # untimed: the cluster server's connections to the shards
        cand, base = await alternate(candidate, baseline, env.size.runs, reset=reset)
    for address in roots:
        if seen["cluster", address] != seen["node", address]:
            raise BenchError(f"citus blast radius of {address}: the answers differ")
    assert base is not None
    largest = max(seen["node", a]["blastRadius"]["totalCount"] for a in roots)
    return Result(
        "citus, blast radius",
        f"blastRadius(first: 100) of {len(roots)} roots of a {_instances(env):,}-instance "
        "state, none kept before, on a 3-node Citus cluster",
        "the same queries to a single node",
        cand,
        base,
        "ratio <= 2.0",
        cand / base <= 2.0,
        env.size.runs,
        {"largest_radius": largest},
    )


async def citus_cross_case(env: Env) -> Result:
    """The radius across states (crossStates: true) of the root read by every other
    state, on the cluster against a single node."""
    size = dataclasses.replace(
        env.size, cross_instances=min(env.size.cross_instances, CROSS_INSTANCES)
    )
    seen: dict[str, Any] = {}
    async with _cluster_server() as cluster:
        for client in (cluster, env.http):
            # the data sources read the producer at the address of their own server
            documents, _ = _across_documents(dataclasses.replace(env, size=size, http=client))
            for k, body in enumerate(documents):
                _ok(await client.post(f"/states/{_ACROSS}-{k}", content=body))

        async def radius(client: Client, key: str) -> None:
            seen[key] = await _graphql(
                client,
                _CROSS_QUERY,
                state=f"{_ACROSS}-0",
                address="aws_vpc.r0",
                cross=True,
                first=100,
            )

        async def candidate() -> None:
            await radius(cluster, "cluster")

        async def baseline() -> None:
            await radius(env.http, "node")

        await candidate()  # untimed: the cluster server's connections to the shards
        cand, base = await alternate(candidate, baseline, env.size.runs)
    total = seen["node"]["blastRadius"]["totalCount"]
    if seen["cluster"] != seen["node"] or total < size.cross_states:
        raise BenchError(f"citus cross-state radius: {total} on a node, answers differ")
    assert base is not None
    return Result(
        "citus, cross-state radius",
        f"blastRadius(crossStates: true, first: 100) over {size.cross_states} states x "
        f"{size.cross_instances:,} instances on a 3-node Citus cluster",
        "the same query to a single node",
        cand,
        base,
        "ratio <= 3.0",
        cand / base <= 3.0,
        env.size.runs,
        {"radius": total},
    )


CITUS_GROUP = [
    citus_import_case,
    citus_change_case,
    citus_list_case,
    citus_blast_case,
    citus_cross_case,
]
