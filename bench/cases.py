"""The benchmark cases. Each returns a Result and checks that candidate and
baseline did the same work (row counts, the same blast-radius sets), so the
smoke test in the normal suite keeps this code honest."""

import asyncio
import base64
import collections
import datetime as dt
import functools
import hashlib
import itertools
import os
import re
import statistics
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from app import db, paging
from app.api.pagination import decode_cursor
from app.catalog.scopes import create_scope
from app.config import Settings
from app.dashboard.pages import DRAWN_PER_LAYER
from app.graph import edges, policies, resources
from app.graph.ids import time_ordered_ids
from app.graph.resources import RESOURCE_COLUMNS, RESOURCE_JOINS
from app.iac import service
from app.jsonutil import dumps, loads
from app.tfstate import INSTANCE_COLUMNS, NormalizedState, parse_state
from app.tfstate.address import instance_address
from app.tfstate.digest import instance_digest
from bench.cost import cost_model_case
from bench.generate import generate_state
from bench.generate_iac import RESOURCES_PER_TABLE, generate_document
from bench.harness import Result, alternate
from bench.http import Client, Response
from tests.helpers.live_server import live_server


@dataclass(frozen=True)
class Size:
    import_instances: int
    big_instances: int
    runs: int
    list_first: int
    whole_first: int
    lock_clients: int
    lock_cycles: int
    plan_resources: int
    history_versions: int
    dashboard_states: int
    cross_states: int  # states of the cross-state blast radius, each of cross_instances
    cross_instances: int


FULL = Size(20_000, 100_000, 5, 1000, 1000, 16, 50, 5000, 100, 1000, 50, 2000)
TINY = Size(200, 600, 1, 50, 20, 3, 3, 40, 3, 20, 4, 60)


@dataclass
class Env:
    http: Client  # to the live server
    pool: db.Pool  # to the same database
    server_pid: int
    size: Size
    database_url: str  # of that database (for a second server)


class BenchError(AssertionError):
    """Candidate and baseline disagree, or a request failed: the numbers mean nothing."""


def _ok(response: Response) -> Response:
    if response.status_code != 200:
        raise BenchError(
            f"{response.method} {response.path}: {response.status_code} {response.text[:500]}"
        )
    return response


async def graphql(env: Env, query: str, **variables: Any) -> dict[str, Any]:
    body = _ok(
        await env.http.post("/graphql", json={"query": query, "variables": variables})
    ).json()
    if body.get("errors"):
        raise BenchError(f"GraphQL errors: {body['errors']}")
    return body["data"]


# --- import ---------------------------------------------------------------------------

# The baseline's tables: the same columns, constraints, indexes and storage as the
# real ones, so that it does the database's share of an import (the raw bytes, the
# rows, every index the schema keeps) and nothing else. Like the candidate's, they
# keep every run's rows.
_BARE = """
    DROP TABLE IF EXISTS bare_edges, bare_resources, bare_versions;
    CREATE TABLE bare_versions (LIKE state_versions INCLUDING ALL);
    CREATE TABLE bare_resources (LIKE resources INCLUDING ALL);
    CREATE TABLE bare_edges (LIKE resource_dependencies INCLUDING ALL);
"""


@dataclass
class _Rows:
    """One version's rows for the baseline, with fresh ids (the same kind the server uses)."""

    state_id: uuid.UUID
    version_id: uuid.UUID
    resources: list[tuple[Any, ...]]
    edges: list[tuple[Any, ...]]

    @classmethod
    def of(cls, state: NormalizedState) -> "_Rows":
        state_id, version_id = uuid.uuid4(), uuid.uuid4()
        ids = time_ordered_ids(len(state.instances))
        return cls(
            state_id,
            version_id,
            [
                (rid, state_id, version_id, state.serial, instance_digest(row), *row)
                for rid, row in zip(ids, state.instances, strict=True)
            ],
            [(state_id, version_id, state.serial, ids[a], ids[b]) for a, b in state.edges],
        )


async def _import(env: Env, case: str, instances: int, prefix: str) -> tuple[Result, bytes]:
    body = dumps(generate_state(instances))
    state = parse_state(body)  # the rows the baseline copies: the same rows, built untimed
    batch = _Rows.of(state)
    names = (f"{prefix}-{n}" for n in itertools.count())
    async with env.pool.acquire() as conn:
        await conn.execute(_BARE)

    async def candidate() -> None:
        _ok(
            await env.http.post(
                f"/states/{next(names)}", content=body, headers={"Content-Type": "application/json"}
            )
        )

    async def baseline() -> None:
        loads(body)
        async with env.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                """INSERT INTO bare_versions (id, state_id, serial, lineage, raw_state, raw_md5)
                   VALUES ($1, $2, 1, $3, $4, $5)""",
                batch.version_id,
                batch.state_id,
                state.lineage,
                body,
                hashlib.md5(body).digest(),
            )
            await conn.copy_records_to_table(
                "bare_resources",
                columns=(
                    "id",
                    "state_id",
                    "state_version_id",
                    "serial_from",
                    "content_hash",
                    *INSTANCE_COLUMNS,
                ),
                records=batch.resources,
            )
            await conn.copy_records_to_table(
                "bare_edges",
                columns=(
                    "state_id",
                    "state_version_id",
                    "serial_from",
                    "from_resource_id",
                    "to_resource_id",
                ),
                records=batch.edges,
            )

    async def reset() -> None:
        nonlocal batch
        batch = _Rows.of(state)

    cand, base = await alternate(candidate, baseline, env.size.runs, reset=reset)
    async with env.pool.acquire() as conn:
        stored = await conn.fetchrow(
            """SELECT count(DISTINCT r.id) AS resources, count(d.*) AS edges
               FROM states s JOIN resources r ON r.state_id = s.id AND r.serial_to IS NULL
               LEFT JOIN resource_dependencies d
                 ON d.state_id = s.id AND d.from_resource_id = r.id AND d.serial_to IS NULL
               WHERE s.name = $1""",
            f"{prefix}-0",
        )
        bare = await conn.fetchval("SELECT count(*) FROM bare_resources")
    expected = (instances, len(state.edges), instances * env.size.runs)
    if (stored["resources"], stored["edges"], bare) != expected:
        raise BenchError(
            f"{case}: stored {dict(stored)}, bare {bare}; expected {instances} instances "
            f"and {len(state.edges)} edges a version, {env.size.runs} baseline versions"
        )
    mb = len(body) / 1e6
    result = Result(
        case,
        f"POST {instances:,}-instance state ({mb:.1f} MB) to /states",
        "parse + raw bytes + COPY the same rows into tables of the same shape",
        cand,
        base,
        "",
        True,
        env.size.runs,
        {"edges": len(state.edges)},
    )
    return result, body


async def import_case(env: Env) -> Result:
    result, _ = await _import(env, "import", env.size.import_instances, "bench/import")
    result.goal = "< 1.0 s and ratio <= 2.0"
    result.met = result.candidate_s < 1.0 and (result.ratio or 0) <= 2.0
    return result


async def _import_and_get(http: Client, names: Iterator[str], body: bytes) -> None:
    name = next(names)
    _ok(
        await http.post(
            f"/states/{name}", content=body, headers={"Content-Type": "application/json"}
        )
    )
    if _ok(await http.get(f"/states/{name}")).content != body:
        raise BenchError(f"GET {name} did not give the bytes back")


async def encryption_case(env: Env) -> Result:
    """The cost of INFRAGRAPH_ENCRYPTION_KEY: the same POST then GET against a second
    server on the same database with a key set. Every generated instance holds a value
    Terraform marks sensitive, so every row's secrets are sealed too."""
    body = dumps(generate_state(env.size.import_instances))
    key = base64.b64encode(os.urandom(32)).decode()
    env_with_key = {"INFRAGRAPH_API_TOKENS": None, "INFRAGRAPH_ENCRYPTION_KEY": key}
    with live_server(env.database_url, env_with_key, timeout=60) as server:
        sealed = Client(server.url, connections=4)
        try:
            names = (f"bench/sealed-{n}" for n in itertools.count())
            clear = (f"bench/clear-{n}" for n in itertools.count())
            cand, base = await alternate(
                functools.partial(_import_and_get, sealed, names, body),
                functools.partial(_import_and_get, env.http, clear, body),
                env.size.runs,
            )
        finally:
            await sealed.aclose()
    async with env.pool.acquire() as conn:
        sealed_rows = await conn.fetchval(
            """SELECT count(*) FROM states s JOIN resources r ON r.state_id = s.id
               WHERE s.name = 'bench/sealed-0' AND substring(r.secrets FROM 1 FOR 1) = '\\x01'"""
        )
    if sealed_rows != env.size.import_instances:
        raise BenchError(f"encryption: {sealed_rows} sealed rows, not every instance")
    return Result(
        "import + GET, encrypted",
        f"POST then GET a {env.size.import_instances:,}-instance state ({len(body) / 1e6:.1f} MB), "
        "INFRAGRAPH_ENCRYPTION_KEY set",
        "the same without a key",
        cand,
        base,
        "ratio <= 1.3",
        cand / base <= 1.3,
        env.size.runs,
    )


def _peak_rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise BenchError("no VmHWM in /proc")


BIG_STATE = "bench/big-0"


async def big_import_case(env: Env) -> Result:
    """Leaves BIG_STATE behind for the cases that read a big graph."""
    result, body = await _import(env, "big import", env.size.big_instances, "bench/big")
    peak = _peak_rss_bytes(env.server_pid)
    result.notes["peak_rss_x_body"] = round(peak / len(body), 3)
    result.goal = "ratio <= 2.0, peak RSS <= 2 x body"
    result.met = (result.ratio or 0) <= 2.0 and peak <= 2 * len(body)
    return result


# --- reads of the big graph ------------------------------------------------------------

_BLAST_QUERY = """
query($state: String!, $address: String!, $maxDepth: Int, $first: Int!, $after: String) {
  blastRadius(state: $state, address: $address, maxDepth: $maxDepth, first: $first,
              after: $after) {
    totalCount
    pageInfo { hasNextPage endCursor }
    edges { node { depth path resource { address type } } }
  }
}"""


async def _roots(env: Env, state: str) -> list[str]:
    """10 hubs (most depended on) and 10 leaves (depended on by nothing)."""
    async with env.pool.acquire() as conn:
        state_id = await conn.fetchval("SELECT id FROM states WHERE name = $1", state)
        # the current version's rows and edges: those still open
        hubs = await conn.fetch(
            """SELECT r.address FROM resources r
               JOIN resource_dependencies d
                 ON d.state_id = $1 AND d.to_resource_id = r.id AND d.serial_to IS NULL
               WHERE r.state_id = $1 AND r.serial_to IS NULL
               GROUP BY r.address ORDER BY count(*) DESC, r.address LIMIT 10""",
            state_id,
        )
        leaves = await conn.fetch(
            """SELECT r.address FROM resources r
               WHERE r.state_id = $1 AND r.serial_to IS NULL AND NOT EXISTS
               (SELECT 1 FROM resource_dependencies d
                WHERE d.state_id = $1 AND d.to_resource_id = r.id AND d.serial_to IS NULL)
               ORDER BY r.address DESC LIMIT 10""",
            state_id,
        )
    return [r["address"] for r in [*hubs, *leaves]]


async def _forget_walks(env: Env) -> None:
    """Every kept blast-radius walk gone: the next page of any radius walks it."""
    async with env.pool.acquire() as conn:
        await conn.execute("TRUNCATE blast_walks, blast_walk_rows")


async def _bare_blast(
    env: Env, state: str, address: str, *, first: int
) -> tuple[int, list[tuple[int, str, list[str]]]]:
    """A whole radius' total and first page (depth, address, path) from the server's
    recursive CTE alone, paged as the server paged it before walks were kept: the walk's
    cost."""
    async with env.pool.acquire() as conn:
        root = await resources.find_resource(conn, state, address, None)
        sql = paging.paged_sql(
            f"""WITH RECURSIVE {edges.walk_sql(edges.Direction.DEPENDENTS)}
                SELECT x.id, b.state_id, $3::uuid AS version_id, b.depth,
                       x.address, x.path
                FROM bfs b
                CROSS JOIN LATERAL unnest(b.ids, b.addresses, b.paths) AS x (id, address, path)
                WHERE b.depth > 0""",
            order="depth, address",
            after="true",
            limit="$4",
            select=f"p.depth, p.path, {RESOURCE_COLUMNS}",
            joins=RESOURCE_JOINS,
            owner=str(paging.ALL),
        )
        version = root["version_id"]
        records = await conn.fetch(sql, [root["id"]], [version], version, first + 1)
    page = paging.single_page(records, first, _BARE_KEY)
    rows = [(r["depth"], r["address"], edges.path_addresses(r["path"])) for r in page.rows]
    return page.total or 0, rows


_BARE_KEY = paging.Keyset(("depth", "address"), (int, str))


def _radius_rows(radius: dict[str, Any]) -> list[tuple[int, str, list[str]]]:
    return [
        (e["node"]["depth"], e["node"]["resource"]["address"], e["node"]["path"])
        for e in radius["edges"]
    ]


async def _radius_page(
    env: Env, address: str, *, max_depth: int | None = None, first: int, after: str | None = None
) -> dict[str, Any]:
    variables = {"maxDepth": max_depth, "first": first, "after": after}
    data = await graphql(env, _BLAST_QUERY, state=BIG_STATE, address=address, **variables)
    return data["blastRadius"]


async def blast_radius_case(env: Env) -> Result:
    """The first page of 20 whole radii, none kept before: each walks and keeps its radius."""
    async with env.pool.acquire() as conn:
        # the walk's plan needs the statistics of the tables just filled: autovacuum
        # gathers them within a minute, later on a loaded machine
        await conn.execute("ANALYZE resources, resource_dependencies")
    roots = await _roots(env, BIG_STATE)
    first = 100
    seen: dict[str, Any] = {}
    bare: dict[str, Any] = {}

    async def candidate() -> None:
        for address in roots:
            radius = await _radius_page(env, address, first=first)
            seen[address] = (radius["totalCount"], _radius_rows(radius))

    async def baseline() -> None:
        for address in roots:
            bare[address] = await _bare_blast(env, BIG_STATE, address, first=first)

    cand, base = await alternate(
        candidate, baseline, env.size.runs, reset=functools.partial(_forget_walks, env)
    )
    if seen != bare:
        raise BenchError("blast radius: GraphQL and the bare CTE disagree")
    return Result(
        "blast radius",
        f"blastRadius(first: {first}) x {len(roots)} roots via GraphQL, none kept before",
        "the same CTE through asyncpg",
        cand,
        base,
        "ratio <= 1.5",
        (cand / base) <= 1.5,
        env.size.runs,
        {"largest_radius": max(total for total, _ in seen.values())},
    )


async def _hub_pages(env: Env, hub: str, first: int) -> list[dict[str, Any]]:
    """Every page of the hub's radius, following endCursor."""
    pages, after = [], None
    while True:
        radius = await _radius_page(env, hub, first=first, after=after)
        pages.append(radius)
        if not radius["pageInfo"]["hasNextPage"]:
            return pages
        after = radius["pageInfo"]["endCursor"]


async def blast_radius_whole_case(env: Env) -> Result:
    """The big graph's biggest hub (its whole radius, the default), every page, against its
    first page alone, both with no walk kept before; and the pages against the bare CTE's
    whole radius in one piece: the same rows, paths and order (no duplicate, no gap), as
    many as the closure of the declared edges."""
    hub = (await _roots(env, BIG_STATE))[0]
    first = env.size.whole_first
    pages: list[dict[str, Any]] = []

    async def candidate() -> None:
        pages[:] = await _hub_pages(env, hub, first)

    async def first_page() -> None:
        await _radius_page(env, hub, first=first)

    cand, base = await alternate(
        candidate, first_page, env.size.runs, reset=functools.partial(_forget_walks, env)
    )
    total, whole = await _bare_blast(env, BIG_STATE, hub, first=10**9)
    paged = [row for radius in pages for row in _radius_rows(radius)]
    if paged != whole or {radius["totalCount"] for radius in pages} != {total}:
        raise BenchError("whole blast radius: the pages and the bare CTE's radius disagree")
    declared = await _declared_closure(env, BIG_STATE, hub)
    if total != declared:
        raise BenchError(f"whole blast radius: {total:,}, the declared closure {declared:,}")
    if len(pages) != -(-total // first) or len({a for _, a, _ in paged}) != total:
        raise BenchError(f"whole blast radius: {len(pages)} pages of {total}, or a duplicate")
    return Result(
        "blast radius, whole",
        f"every page of the biggest hub's radius ({total:,}), first: {first}, via GraphQL",
        "its first page alone, via GraphQL",
        cand,
        base,
        "ratio <= 3",
        (cand / base) <= 3,
        env.size.runs,
        {"radius": total, "pages": len(pages), "declared_closure": declared},
    )


async def _declared_closure(env: Env, state: str, address: str) -> int:
    """How many resources depend on `address`, transitively, over every declared edge of
    the state's current version (not only the direct ones): the radius' size."""
    async with env.pool.acquire() as conn:
        root = await resources.find_resource(conn, state, address, None)
        size: int = await conn.fetchval(
            """WITH RECURSIVE closure (id) AS (
                   SELECT $2::uuid
                 UNION
                   SELECT d.from_resource_id FROM closure c
                   JOIN resource_dependencies d ON d.state_id = $1
                    AND d.to_resource_id = c.id AND d.serial_to IS NULL)
               SELECT count(*) - 1 FROM closure""",
            root["state_id"],
            root["id"],
        )
    return size


# The server's limits on kept walks (the page case reads a kept walk: they do not apply).
_WALK_LIMITS = edges.WalkLimits(Settings.blast_cache_rows, Settings.blast_cache_seconds)


async def blast_radius_page_case(env: Env) -> Result:
    """A page from the middle of the hub's kept radius: the server's read of it (the one
    statement on a kept walk, rows decoded), absolute; the same page via GraphQL in notes."""
    hub = (await _roots(env, BIG_STATE))[0]
    first = env.size.whole_first
    pages = await _hub_pages(env, hub, first)  # kept, if the whole case had not left it so
    middle = len(pages) // 2
    cursor = pages[middle - 1]["pageInfo"]["endCursor"] if middle else None
    after = decode_cursor(cursor, edges.BLAST_KEY) if cursor else None
    async with env.pool.acquire() as conn:
        root = await resources.find_resource(conn, BIG_STATE, hub, None)
    key = (root["id"], root["version_id"])
    read: list[Any] = []
    shown: list[Any] = []

    async def server_read() -> None:
        async with env.pool.acquire() as conn:
            found = await edges.blast_radius(
                conn,
                [key],
                limits=_WALK_LIMITS,
                first=first,
                after=after,
                json=False,  # as the query reads it: it selects none of them
                attributes=False,
            )
        read[:] = [
            (r["depth"], r["address"], edges.path_addresses(r["path"])) for r in found[key].rows
        ]

    async def via_graphql() -> None:
        radius = await _radius_page(env, hub, first=first, after=cursor)
        shown[:] = _radius_rows(radius)

    seconds, graphql_s = await alternate(server_read, via_graphql, env.size.runs)
    if not read or read != shown or shown != _radius_rows(pages[middle]):
        raise BenchError("blast radius page: the kept page differs from the one paged before")
    return Result(
        "blast radius, page",
        f"the server's read of a kept page ({first} of the hub's radius, from its middle)",
        "(absolute)",
        seconds,
        None,
        "<= 20 ms",
        seconds <= 0.020,
        env.size.runs,
        {"graphql_ms": round((graphql_s or 0) * 1000, 1)},
    )


_LIST_QUERY = """
query($state: String!, $first: Int!) {
  resources(first: $first, filter: {state: $state}) {
    edges { node { address type name provider module attributes } }
  }
}"""


async def list_case(env: Env) -> Result:
    first = env.size.list_first
    got: list[str] = []
    direct: list[str] = []

    async def candidate() -> None:
        data = await graphql(env, _LIST_QUERY, state=BIG_STATE, first=first)
        got[:] = [e["node"]["address"] for e in data["resources"]["edges"]]

    async def baseline() -> None:
        async with env.pool.acquire() as conn:
            rows = await conn.fetch(
                """SELECT r.address, r.type, r.name, r.provider, r.module_path, r.attributes
                   FROM states s JOIN resources r ON r.state_id = s.id AND r.serial_to IS NULL
                   WHERE s.name = $1 ORDER BY r.address COLLATE "C" LIMIT $2""",
                BIG_STATE,
                first,
            )
        dumps([dict(r) for r in rows])
        direct[:] = [r["address"] for r in rows]

    cand, base = await alternate(candidate, baseline, env.size.runs)
    if got != direct:
        raise BenchError("list: GraphQL and the direct query returned different rows")
    return Result(
        "list",
        f"resources(first: {first}) with 6 fields via GraphQL",
        "asyncpg fetch + orjson",
        cand,
        base,
        "ratio <= 2.0",
        (cand / base) <= 2.0,
        env.size.runs,
    )


async def state_get_case(env: Env) -> Result:
    sizes: list[int] = []

    async def candidate() -> None:
        sizes.append(len(_ok(await env.http.get(f"/states/{BIG_STATE}")).content))

    async def baseline() -> None:
        # the same bytes stored whole and uncompressed (as versions were before
        # migrations/0009): the big import's baseline wrote them
        async with env.pool.acquire() as conn:
            raw = await conn.fetchval("SELECT raw_state FROM bare_versions LIMIT 1")
        sizes.append(len(raw))

    cand, base = await alternate(candidate, baseline, env.size.runs)
    if len(set(sizes)) != 1:
        raise BenchError(f"state GET: sizes differ {set(sizes)}")
    return Result(
        "state GET",
        f"GET the {sizes[0] / 1e6:.0f} MB state",
        "SELECT raw_state",
        cand,
        base,
        "ratio <= 1.3",
        (cand / base) <= 1.3,
        env.size.runs,
    )


# --- locks ----------------------------------------------------------------------------


def _lock_info(lock_id: str) -> dict[str, str]:
    return {
        "ID": lock_id,
        "Operation": "OperationTypeApply",
        "Info": "",
        "Who": "bench@localhost",
        "Version": "1.15.5",
        "Created": dt.datetime.now(dt.UTC).isoformat(),
        "Path": "",
    }


async def locks_case(env: Env) -> Result:
    clients, cycles = env.size.lock_clients, env.size.lock_cycles
    names = [f"bench/lock-{n}" for n in range(clients)]
    async with env.pool.acquire() as conn:
        await conn.executemany(
            "INSERT INTO states (name) VALUES ($1) ON CONFLICT DO NOTHING", [(n,) for n in names]
        )
        ids = dict(await conn.fetch("SELECT name, id FROM states WHERE name = ANY($1)", names))

    async def http_client(name: str) -> None:
        for _ in range(cycles):
            info = _lock_info(str(uuid.uuid4()))
            _ok(await env.http.request("LOCK", f"/states/{name}", json=info))
            _ok(await env.http.request("UNLOCK", f"/states/{name}", json=info))

    async def sql_client(state_id: uuid.UUID, name: str) -> None:
        # The same work as the server's: take or release the lock and record it in the
        # audit trail, atomically; here in one statement each, the least PostgreSQL needs.
        async with env.pool.acquire() as conn:
            for _ in range(cycles):
                info = _lock_info(str(uuid.uuid4()))
                taken = await conn.fetchval(
                    """WITH taken AS (
                           INSERT INTO state_locks (state_id, lock_id, info) VALUES ($1, $2, $3)
                           ON CONFLICT DO NOTHING RETURNING state_id)
                       INSERT INTO events (state_id, state_name, action, actor, detail)
                       SELECT state_id, $4, 'lock', 'bench', $5 FROM taken RETURNING state_id""",
                    state_id,
                    info["ID"],
                    info,
                    name,
                    {"id": info["ID"], "who": info["Who"], "operation": info["Operation"]},
                )
                if taken is None:
                    raise BenchError("baseline lock not taken")
                released = await conn.fetchval(
                    """WITH gone AS (
                           DELETE FROM state_locks WHERE state_id = $1 AND lock_id = $2
                           RETURNING state_id, info)
                       INSERT INTO events (state_id, state_name, action, actor, detail)
                       SELECT state_id, $3, 'unlock', 'bench',
                              jsonb_build_object('id', info->'ID', 'who', info->'Who',
                                                 'operation', info->'Operation')
                       FROM gone RETURNING state_id""",
                    state_id,
                    info["ID"],
                    name,
                )
                if released is None:
                    raise BenchError("baseline lock not released")

    async def candidate() -> None:
        await asyncio.gather(*(http_client(n) for n in names))

    async def baseline() -> None:
        await asyncio.gather(*(sql_client(ids[n], n) for n in names))

    cand, base = await alternate(candidate, baseline, env.size.runs)
    async with env.pool.acquire() as conn:
        if await conn.fetchval("SELECT count(*) FROM state_locks"):
            raise BenchError("locks left behind")
    total = clients * cycles
    return Result(
        "locks",
        f"{clients} clients x {cycles} LOCK/UNLOCK cycles over HTTP",
        "INSERT ON CONFLICT / DELETE + audit event, one statement each, asyncpg",
        cand,
        base,
        "ratio <= 3",
        (cand / base) <= 3,
        env.size.runs,
        {"cycles_per_s": round(total / cand), "baseline_cycles_per_s": round(total / base)},
    )


# --- plan -----------------------------------------------------------------------------

PLAN_QUERY = """mutation ($scope: String!, $document: String!) {
  plan(scope: $scope, document: $document) { hash summary { noop create skip insert } }
}"""


async def plan_case(env: Env) -> Result:
    tables = max(1, env.size.plan_resources // RESOURCES_PER_TABLE)
    document = generate_document(tables)
    async with env.pool.acquire() as conn:
        await create_scope(conn, "bench", "Bench")
        first = await service.plan(conn, "bench", document)
        await service.apply(conn, "bench", document, first.hash, actor="bench")

    expected = {"noop": tables * RESOURCES_PER_TABLE, "create": 0, "skip": 2 * tables, "insert": 0}

    async def candidate() -> None:
        data = await graphql(env, PLAN_QUERY, scope="bench", document=document.decode())
        if data["plan"]["summary"] != expected:
            raise AssertionError(f"plan summary {data['plan']['summary']} != {expected}")

    seconds, _ = await alternate(candidate, None, env.size.runs)
    return Result(
        "plan",
        f"plan mutation, {tables * RESOURCES_PER_TABLE:,}-resource document vs same scope",
        "(absolute)",
        seconds,
        None,
        "< 3 s",
        seconds < 3.0,
        env.size.runs,
        {"document_bytes": len(document), "lines": document.count(b"\n")},
    )


# --- history: versions share what did not change ---------------------------------------


def _changed(document: dict[str, Any], serial: int, resource: int | None = None) -> bytes:
    """`document` at `serial` with one attribute of one instance changed: of `resource`
    (an index), else of one picked by the serial (each version changes another one)."""
    resources = document["resources"]
    index = (serial * 7919) % len(resources) if resource is None else resource
    instance = resources[index]["instances"][0]
    instance["attributes"]["size"] = serial
    return dumps({**document, "serial": serial})


async def _database_bytes(env: Env) -> int:
    """Everything this group's database stores in its tables (indexes and TOAST included)."""
    async with env.pool.acquire() as conn:
        return await conn.fetchval(
            """SELECT sum(pg_total_relation_size(oid))::bigint FROM pg_class
               WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace"""
        )


async def change_case(env: Env) -> Result:
    """A one-attribute change POSTed to a big state, against the first import of that
    state (its baseline: what every version cost before versions shared rows)."""
    document = generate_state(env.size.import_instances)
    body = dumps(document)
    _ok(await env.http.post("/states/bench/changed", content=body))
    serials = itertools.count(2)
    changes = {serial: _changed(document, serial) for serial in range(2, 2 + env.size.runs)}
    firsts = (f"bench/first-{n}" for n in itertools.count())

    async def candidate() -> None:
        _ok(await env.http.post("/states/bench/changed", content=changes[next(serials)]))

    async def baseline() -> None:
        _ok(await env.http.post(f"/states/{next(firsts)}", content=body))

    cand, base = await alternate(candidate, baseline, env.size.runs)
    async with env.pool.acquire() as conn:
        summary = await conn.fetchval(
            """SELECT detail FROM events WHERE state_name = 'bench/changed' AND action = 'write'
               ORDER BY created_at DESC LIMIT 1"""
        )
    if (summary["added"], summary["changed"], summary["removed"]) != (0, 1, 0):
        raise BenchError(f"change: the last write changed {summary}, not one instance")
    return Result(
        "change",
        f"POST a 1-attribute change to a {env.size.import_instances:,}-instance state",
        "the first import of the same state",
        cand,
        base,
        "ratio <= 0.25",
        (cand / base) <= 0.25,
        env.size.runs,
    )


async def storage_case(env: Env) -> Result:
    """Database growth of a first import, then of each of `history_versions` one-attribute
    changes to it (the time of those writes is the candidate; no baseline)."""
    document = generate_state(env.size.import_instances, seed=1)
    empty = await _database_bytes(env)
    _ok(await env.http.post("/states/bench/history", content=dumps(document)))
    first = await _database_bytes(env) - empty
    versions = env.size.history_versions
    # always the same instance: its history is then one entry a version (history_case)
    bodies = [_changed(document, serial, HISTORY_RESOURCE) for serial in range(2, 2 + versions)]
    growth = []
    started = time.perf_counter()
    for body in bodies:
        before = await _database_bytes(env)
        _ok(await env.http.post("/states/bench/history", content=body))
        growth.append(await _database_bytes(env) - before)
    seconds = time.perf_counter() - started
    total = sum(growth)
    per_version = statistics.median(growth) / first
    # 100 versions within the first import's size again (scaled when fewer were written)
    met = per_version <= 0.01 and total * 100 / versions <= first
    return Result(
        "storage",
        f"database growth of {versions} 1-attribute changes vs the first import "
        f"({first / 1e6:.1f} MB)",
        "(sizes)",
        seconds / versions,
        None,
        "median version <= 1% of the first; 100 versions <= 2x the first",
        met,
        versions,
        {
            "first_mb": round(first / 1e6, 2),
            "median_version_pct": round(100 * per_version, 3),
            "versions_x_first": round((first + total) / first, 3),
        },
    )


HISTORY_RESOURCE = 1  # the resource whose first instance storage_case changes every version

_DIFF_QUERY = """query($state: String!, $against: Int!) {
  state(name: $state) { currentVersion { serial
    diff(against: $against) { added removed changed { address changes { path } } } } } }"""


async def diff_case(env: Env) -> Result:
    """The diff of the last two versions storage_case wrote (one change apart)."""
    latest = 1 + env.size.history_versions
    changed: list[Any] = []

    async def candidate() -> None:
        data = await graphql(env, _DIFF_QUERY, state="bench/history", against=latest - 1)
        changed[:] = data["state"]["currentVersion"]["diff"]["changed"]

    seconds, _ = await alternate(candidate, None, env.size.runs)
    if len(changed) != 1:
        raise BenchError(f"diff: {len(changed)} changed resources, not 1")
    return Result(
        "diff",
        f"diff of two versions one change apart ({env.size.import_instances:,} instances)",
        "(absolute)",
        seconds,
        None,
        "< 50 ms",
        seconds < 0.05,
        env.size.runs,
    )


_HISTORY_QUERY = """query($state: String!, $address: String!) {
  resources(first: 1, filter: {state: $state, address: $address}) { edges { node {
    history(first: 200) { totalCount edges { node { serial change attributes { path } } } }
  } } } }"""


async def history_case(env: Env) -> Result:
    """The history of the instance storage_case changed in every version."""
    document = generate_state(env.size.import_instances, seed=1)
    resource = document["resources"][HISTORY_RESOURCE]
    address = instance_address(
        resource.get("module"),
        resource["mode"],
        resource["type"],
        resource["name"],
        resource["instances"][0].get("index_key"),
        None,
    )
    total = 0

    async def candidate() -> None:
        nonlocal total
        data = await graphql(env, _HISTORY_QUERY, state="bench/history", address=address)
        total = data["resources"]["edges"][0]["node"]["history"]["totalCount"]

    seconds, _ = await alternate(candidate, None, env.size.runs)
    if total != env.size.history_versions + 1:
        raise BenchError(f"history: {total} entries, not {env.size.history_versions + 1}")
    return Result(
        "history",
        f"a resource's history of {total} versions via GraphQL",
        "(absolute)",
        seconds,
        None,
        "< 50 ms",
        seconds < 0.05,
        env.size.runs,
    )


# --- policies: saved checks on every write --------------------------------------------

POLICED, UNPOLICED = "bench/policed", "bench/unpoliced"
_NEW_POLICY = """mutation($name: String!) { createPolicy(input: {name: $name,
  resourceType: "aws_*", states: "bench/policed", condition: "$.public_access == true"}) {
  name } }"""


def _policy_specs(count: int) -> list[policies.PolicySpec]:
    """`count` policies covering every instance of POLICED, of the shapes the issue names
    (a value, a threshold, a missing tag, a list element, a combination)."""
    shapes = (  # most instances pass; a few violate (as in a state people look after)
        "$.public_access == true && $.size > {n}",
        "!exists($.tags.Name) && $.size == {n}",
        '$.tags.team == "team-{n}"',
        'exists($.network.security_group_ids[*] ? (@ == "sg-{n:08x}"))',
        '$.name starts with "r{n}-" && $.tags.env == "prod"',
    )
    return [
        policies.PolicySpec(
            name=f"bench-{n:03d}",
            resource_type="aws_*",
            states=POLICED,
            condition=shapes[n % len(shapes)].format(n=n),
        )
        for n in range(count)
    ]


async def policy_write_case(env: Env) -> Result:
    """A one-attribute change POSTed to a big state that 100 policies cover, against the
    same change POSTed to a copy of that state that none covers."""
    document = generate_state(env.size.import_instances, seed=2)
    async with env.pool.acquire() as conn:
        for spec in _policy_specs(100):
            await policies.create_policy(conn, spec, actor="bench")
    for name in (POLICED, UNPOLICED):
        _ok(await env.http.post(f"/states/{name}", content=dumps(document)))
    changes = {serial: _changed(document, serial) for serial in range(2, 2 + 3 * env.size.runs)}
    policed, unpoliced = itertools.count(2), itertools.count(2)

    async def candidate() -> None:
        _ok(await env.http.post(f"/states/{POLICED}", content=changes[next(policed)]))

    async def baseline() -> None:
        _ok(await env.http.post(f"/states/{UNPOLICED}", content=changes[next(unpoliced)]))

    # A change costs ~1.3 s here, a few ms of it the policies': medians of 3x the runs,
    # and the added time as the median of each pair's difference (drift cancels out).
    runs = 3 * env.size.runs
    pairs = [await alternate(candidate, baseline, 1) for _ in range(runs)]
    cand = statistics.median(c for c, _ in pairs)
    base = statistics.median(b for _, b in pairs if b is not None)
    difference = statistics.median(c - b for c, b in pairs if b is not None)
    async with env.pool.acquire() as conn:
        evaluated = await conn.fetchval(
            """SELECT count(DISTINCT detail->>'policy') FROM events
               WHERE state_name = $1 AND action = 'policy-violated'""",
            POLICED,
        )
        elsewhere = await conn.fetchval(
            "SELECT count(*) FROM events WHERE state_name = $1 AND action LIKE 'policy-%'",
            UNPOLICED,
        )
    if not evaluated or elsewhere:
        raise BenchError(f"policy write: {evaluated} policies violated, {elsewhere} elsewhere")
    # The write's medians differ by the machine's noise (tens of ms on ~1 s): the goal is
    # judged on the evaluation itself, each state's last write evaluated again (rolled back).
    hook = {name: await _last_write_check(env, name, runs) for name in (POLICED, UNPOLICED)}
    added = hook[POLICED] - hook[UNPOLICED]
    return Result(
        "policies, write",
        f"POST a 1-attribute change to a {env.size.import_instances:,}-instance state "
        "100 policies cover",
        "the same change to a copy no policy covers",
        cand,
        base,
        "adds <= 10 ms (the evaluation in the write's transaction)",
        added <= 0.010,
        runs,
        {
            "added_ms": round(added * 1000, 2),
            "evaluation_ms": round(hook[POLICED] * 1000, 2),
            "uncovered_evaluation_ms": round(hook[UNPOLICED] * 1000, 2),
            "paired_write_difference_ms": round(difference * 1000, 1),
            "policies_violated": evaluated,
        },
    )


async def _last_write_check(env: Env, name: str, runs: int) -> float:
    """Median seconds of `policies.check_write` over the rows the last write of state
    `name` inserted and closed, as write_version runs it, in a transaction rolled back."""
    async with env.pool.acquire() as conn:
        state_id, serial = await conn.fetchrow(
            """SELECT s.id, max(v.serial) FROM states s JOIN state_versions v ON v.state_id = s.id
               WHERE s.name = $1 GROUP BY s.id""",
            name,
        )
        rows = await conn.fetch(
            """SELECT id, serial_from = $2 AS inserted FROM resources
               WHERE state_id = $1 AND (serial_from = $2 OR serial_to = $2)""",
            state_id,
            serial,
        )
        seconds = []
        for _ in range(runs):
            transaction = conn.transaction()
            await transaction.start()
            started = time.perf_counter()
            await policies.check_write(
                conn,
                state_id,
                name,
                serial,
                inserted=[r["id"] for r in rows if r["inserted"]],
                closed=[r["id"] for r in rows if not r["inserted"]],
                actor="bench",
            )
            seconds.append(time.perf_counter() - started)
            await transaction.rollback()
    return statistics.median(seconds)


async def policy_new_case(env: Env) -> Result:
    """createPolicy over GraphQL, evaluating a new policy over POLICED's current version
    (left by policy_write_case), against the same condition counted by one SQL query."""
    names = (f"new-{n}" for n in itertools.count())
    made: list[str] = []

    async def candidate() -> None:
        name = next(names)
        await graphql(env, _NEW_POLICY, name=name)
        made.append(name)

    counts: list[int] = []

    async def baseline() -> None:
        async with env.pool.acquire() as conn:
            counts.append(
                await conn.fetchval(
                    r"""SELECT count(*) FROM states s
                       JOIN resources r ON r.state_id = s.id AND r.serial_to IS NULL
                       WHERE s.name = $1 AND r.type LIKE 'aws\_%'
                         AND r.attributes @@ '$.public_access == true'""",
                    POLICED,
                )
            )

    opened: list[int] = []  # what each new policy opened, read before it goes

    async def reset() -> None:
        async with env.pool.acquire() as conn:
            for name in made:
                page = await policies.list_violations(
                    conn, state=None, policy=name, open=True, first=0
                )
                opened.append(page.total or 0)
                await policies.delete_policy(conn, name)
        made.clear()

    cand, base = await alternate(candidate, baseline, env.size.runs, reset=reset)
    await reset()
    if len(opened) != env.size.runs or set(opened) != set(counts):
        raise BenchError(f"new policy: opened {opened}, the query counted {counts}")
    return Result(
        "policies, new",
        f"createPolicy evaluated over {env.size.import_instances:,} current instances",
        "the same condition counted by one SQL query",
        cand,
        base,
        "<= 1 s",
        cand <= 1.0,
        env.size.runs,
        {"violations": counts[0]},
    )


# --- dashboard: pages rendered by the server ---------------------------------------------

_HTML = {"Accept": "text/html"}
# a box of the picture: one resource, a group of N, or the "+K more" of a depth
_DRAWN_NODE = re.compile(
    rb'<g class="node[^"]*" data-depth="(\d+)" (?:data-address=|data-group="[^"]*" '
    rb'data-members="(\d+)"|data-more="(\d+)")'
)
_RADIUS_LAYER = re.compile(rb"depth (\d+): ([\d,]+)")


async def _page(env: Env, path: str) -> bytes:
    return _ok(await env.http.get(path, headers=_HTML)).content


DASHBOARD_VERSIONS = 3  # of each state on the overview: its current one is read


async def dashboard_overview_case(env: Env) -> Result:
    """The overview (`/`) of `dashboard_states` states of a few resources and
    DASHBOARD_VERSIONS versions each."""
    count = env.size.dashboard_states
    names = [f"bench/dash-{i:04d}" for i in range(count)]

    async def write(name: str, serial: int) -> None:
        body = dumps(generate_state(5, hubs=1, seed=3, serial=serial, lineage="dash"))
        _ok(await env.http.post(f"/states/{name}", content=body))

    for serial in range(1, DASHBOARD_VERSIONS + 1):
        await asyncio.gather(*(write(name, serial) for name in names))
    html = b""

    async def candidate() -> None:
        nonlocal html
        html = await _page(env, "/")

    seconds, _ = await alternate(candidate, None, env.size.runs)
    listed = html.count(b'<tr data-state="bench/dash-')
    if listed != count:
        raise BenchError(f"overview: {listed} states listed, not {count}")
    return Result(
        "dashboard overview",
        f"GET / (HTML) listing {count:,} states of {DASHBOARD_VERSIONS} versions",
        "(absolute)",
        seconds,
        None,
        "< 300 ms",
        seconds < 0.3,
        env.size.runs,
    )


async def dashboard_resource_case(env: Env) -> Result:
    """The resource page of the hub with the biggest blast radius of an
    `import_instances` state: attributes, history, neighbours and the radius picture
    (walked by the first render, untimed: later renders read the kept walk)."""
    state = "bench/dash-big"
    document = generate_state(env.size.import_instances, seed=5)
    _ok(await env.http.post(f"/states/{state}", content=dumps(document)))
    [hub, *_] = await _roots(env, state)
    path = "/ui/resource?" + urllib.parse.urlencode({"state": state, "address": hub})
    started = time.perf_counter()
    html = await _page(env, path)
    first_s = time.perf_counter() - started

    async def candidate() -> None:
        nonlocal html
        html = await _page(env, path)

    seconds, _ = await alternate(candidate, None, env.size.runs)
    total = (await graphql(env, _BLAST_QUERY, state=state, address=hub, maxDepth=10, first=1))[
        "blastRadius"
    ]["totalCount"]
    layers = {int(d): int(n.replace(b",", b"")) for d, n in _RADIUS_LAYER.findall(html)}
    drawn: collections.Counter[int] = collections.Counter()  # members each depth's boxes hold
    boxes: collections.Counter[int] = collections.Counter()
    for depth, group, more in _DRAWN_NODE.findall(html):
        drawn[int(depth)] += int(group or more or 1)
        boxes[int(depth)] += 1
    if (
        sum(layers.values()) != total
        or any(drawn[d] != n for d, n in layers.items() if d > 0)
        or any(b > DRAWN_PER_LAYER + 1 for b in boxes.values())
    ):
        raise BenchError(f"resource page: radius {layers} drawn {drawn}, GraphQL total {total}")
    return Result(
        "dashboard resource",
        f"GET /ui/resource of a hub of {env.size.import_instances:,} instances "
        f"(radius {total:,}, kept walk)",
        "(absolute)",
        seconds,
        None,
        "< 300 ms",
        seconds < 0.3,
        env.size.runs,
        {"first render (walks the radius)": f"{first_s * 1000:.0f} ms"},
    )


IMPORT_GROUP = (import_case, encryption_case)
# --- across states -----------------------------------------------------------------------

_HUBS = 12  # generate_state's default: its first resources are the hubs
_CROSS_QUERY = """
query($state: String!, $address: String!, $cross: Boolean!, $first: Int!) {
  blastRadius(state: $state, address: $address, crossStates: $cross, first: $first) {
    totalCount edges { node { depth path resource { address } } } } }"""


def _across_documents(env: Env) -> tuple[list[bytes], bytes]:
    """`cross_states` states of `cross_instances` each: state 0's first hub is the root and
    its id output `hub`; each other state reads it through terraform_remote_state (a data
    source its hubs depend on). And the same graph as one state: each state's resources in
    a module of their own, the data source a resource there depending on the root."""
    size = env.size
    states = [generate_state(size.cross_instances, seed=k) for k in range(size.cross_states)]
    [root] = [r for r in states[0]["resources"] if r["name"] == "r0"]
    hub_id = root["instances"][0]["attributes"]["id"]
    states[0]["outputs"] = {"hub": {"value": hub_id, "type": "string"}}
    address = f"{env.http.base_url}/states/{_ACROSS}-0"
    merged: list[dict[str, Any]] = []
    for k, document in enumerate(states):
        module = f"module.s{k}"
        if k:
            up = {
                "mode": "data",
                "type": "terraform_remote_state",
                "name": "up",
                "provider": 'provider["terraform.io/builtin/terraform"]',
                "instances": [
                    {
                        "schema_version": 0,
                        "attributes": {
                            "backend": "http",
                            "config": {"value": {"address": address}, "type": "dynamic"},
                            "outputs": {"value": {"hub": hub_id}, "type": "dynamic"},
                        },
                    }
                ],
            }
            for resource in document["resources"]:
                if int(resource["name"][1:]) < _HUBS:
                    for instance in resource["instances"]:
                        instance["dependencies"] = ["data.terraform_remote_state.up"]
            stand_in = {
                **up,
                "mode": "managed",
                "type": "terraform_data",
                "instances": [{"schema_version": 0, "attributes": {"id": f"up-{k}"},
                               "dependencies": ["module.s0.aws_vpc.r0"]}],
            }  # fmt: skip
            merged.append({"module": module, **stand_in})
            document["resources"].append(up)
        for resource in document["resources"]:
            if resource["mode"] == "managed":
                merged.append(_in_module(resource, module))
    one = generate_state(1)
    one["resources"] = merged
    return [dumps(d) for d in states], dumps(one)


def _in_module(resource: dict[str, Any], module: str) -> dict[str, Any]:
    """`resource` moved into `module` (its dependencies with it)."""

    def moved(address: str) -> str:
        return address.replace("data.terraform_remote_state.up", "terraform_data.up")

    instances = [
        {**i, "dependencies": [f"{module}.{moved(d)}" for d in i.get("dependencies", [])]}
        for i in resource["instances"]
    ]
    inner = resource.get("module")
    return {
        **resource,
        "module": f"{module}.{inner}" if inner else module,
        "instances": instances,
    }


_ACROSS = "bench/across"
_MERGED = "bench/across-merged"


async def cross_blast_radius_case(env: Env) -> Result:
    """The radius of the root across `cross_states` states (crossStates: true, walked
    anew for every request), against the single-state radius of the same graph in one
    state (its kept walk forgotten before each run), both whole: the same resources (the
    whole graph). Depths may differ: past 30,000 instances a state's direct edges are
    approximated and keep a few implied ones (app/tfstate/reduction.py), so the one big
    state has shortcuts the small ones have not."""
    documents, merged = _across_documents(env)
    for k, body in enumerate(documents):
        _ok(await env.http.post(f"/states/{_ACROSS}-{k}", content=body))
    _ok(await env.http.post(f"/states/{_MERGED}", content=merged))
    async with env.pool.acquire() as conn:
        await conn.execute("ANALYZE")
    first = 100
    found: dict[str, Any] = {}

    async def across() -> None:
        found["across"] = (await graphql(
            env, _CROSS_QUERY, state=f"{_ACROSS}-0", address="aws_vpc.r0", cross=True, first=first
        ))["blastRadius"]  # fmt: skip

    async def single() -> None:
        found["single"] = (await graphql(
            env, _CROSS_QUERY, state=_MERGED, address="module.s0.aws_vpc.r0", cross=False,
            first=first,
        ))["blastRadius"]  # fmt: skip

    cand, base = await alternate(
        across, single, env.size.runs, reset=functools.partial(_forget_walks, env)
    )
    total = found["across"]["totalCount"]
    if total != found["single"]["totalCount"] or total < env.size.cross_states:
        raise BenchError(
            f"cross-state blast radius: {total} across states, "
            f"{found['single']['totalCount']} in one state"
        )
    return Result(
        "cross-state blast radius",
        f"blastRadius(crossStates: true, first: {first}) over {env.size.cross_states} states "
        f"x {env.size.cross_instances:,} instances, via GraphQL",
        "the single-state radius of the same graph in one state, none kept before",
        cand,
        base,
        "ratio <= 2",
        (cand / (base or cand)) <= 2,
        env.size.runs,
        {"radius": total},
    )


BIG_GROUP = (
    big_import_case,
    blast_radius_case,
    blast_radius_whole_case,
    blast_radius_page_case,
    list_case,
    state_get_case,
)
LOCK_GROUP = (locks_case,)
PLAN_GROUP = (plan_case,)
HISTORY_GROUP = (change_case, storage_case, diff_case, history_case)
POLICY_GROUP = (policy_write_case, policy_new_case)
DASHBOARD_GROUP = (dashboard_overview_case, dashboard_resource_case)
ACROSS_GROUP = (cross_blast_radius_case,)
COST_GROUP = (cost_model_case,)
GROUPS = {
    "import": IMPORT_GROUP,
    "big": BIG_GROUP,
    "locks": LOCK_GROUP,
    "plan": PLAN_GROUP,
    "history": HISTORY_GROUP,
    "policies": POLICY_GROUP,
    "dashboard": DASHBOARD_GROUP,
    "across": ACROSS_GROUP,
    "cost": COST_GROUP,
}

from bench.webhooks import WEBHOOK_GROUP  # noqa: E402  (it uses the helpers above)

GROUPS["webhooks"] = WEBHOOK_GROUP

from bench.oidc import OIDC_GROUP  # noqa: E402  (it uses the helpers above)

GROUPS["oidc"] = OIDC_GROUP

from bench.plans import PLANS_GROUP  # noqa: E402  (it uses the helpers above)

GROUPS["plans"] = PLANS_GROUP

from bench.configuration import CONFIGURATION_GROUP  # noqa: E402  (it uses the helpers above)

GROUPS["configuration"] = CONFIGURATION_GROUP
from bench.leases import LEASES_GROUP  # noqa: E402  (it uses the helpers above)

GROUPS["leases"] = LEASES_GROUP
from bench.citus import CITUS_GROUP  # noqa: E402  (it uses the helpers above)

GROUPS["citus"] = CITUS_GROUP
from bench.states_map import MAP_GROUP  # noqa: E402  (it uses the helpers above)

GROUPS["map"] = MAP_GROUP
from bench.floor import durable_floor_case, two_imports_case  # noqa: E402

GROUPS["floor"] = (durable_floor_case,)
GROUPS["concurrent"] = (two_imports_case,)
from bench.peer import peer_cases  # noqa: E402

GROUPS["peer"] = (peer_cases,)
from bench.grouped_radius import dashboard_grouped_radius_case  # noqa: E402

GROUPS["dashboard"] = (*DASHBOARD_GROUP, dashboard_grouped_radius_case)
