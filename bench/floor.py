"""A first import against its durable floor, and two big imports at once.

- Durable floor: the same POST as the import case, against what a store of the graph
  must do at least, in the same run: parse the body (orjson), then COPY its instance rows
  and edges into plain durable tables without indexes, in one transaction (the body's
  bytes are not stored: bench/stages.py gives that its own floor).
- Two at once: two imports of `big_instances` each, posted together to a fresh server,
  against one such import alone on another fresh server: the wall time of the two over
  the one, and the peak RSS of the server (VmHWM) over one body.
"""

import asyncio
import itertools
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from app.jsonutil import dumps
from app.tfstate import INSTANCE_COLUMNS
from bench.cases import BenchError, Env, _ok, _peak_rss_bytes
from bench.generate import generate_state
from bench.harness import Result, alternate
from bench.http import Client
from bench.stages import FLOOR_EDGE_COLUMNS, FLOOR_RESOURCE_COLUMNS, floor_rows, process_cpu
from tests.helpers.live_server import live_server

_FLOOR = """
    DROP TABLE IF EXISTS durable_versions, durable_resources, durable_edges;
    CREATE TABLE durable_versions (id uuid, state_id uuid, serial bigint, lineage text);
    CREATE TABLE durable_resources (LIKE resources INCLUDING DEFAULTS);
    CREATE TABLE durable_edges (LIKE resource_dependencies INCLUDING DEFAULTS);
"""


def _cpu_of(pids: list[int]) -> dict[int, float]:
    """The CPU seconds of each of `pids` still running."""
    found = {}
    for pid in pids:
        try:
            found[pid] = process_cpu(pid)
        except FileNotFoundError:
            continue
    return found


async def durable_floor_case(env: Env) -> Result:
    instances = env.size.import_instances
    body = dumps(generate_state(instances))
    rows, edges, lineage = floor_rows(body)
    names = (f"bench/floor-{n}" for n in itertools.count())
    async with env.pool.acquire() as conn:
        await conn.execute(_FLOOR)

    async def candidate() -> None:
        _ok(await env.http.post(f"/states/{next(names)}", content=body))

    async def floor() -> None:
        orjson.loads(body)
        async with env.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO durable_versions VALUES ($1, $2, 1, $3)",
                rows[0][2],
                rows[0][1],
                lineage,
            )
            await conn.copy_records_to_table(
                "durable_resources",
                columns=(*FLOOR_RESOURCE_COLUMNS, *INSTANCE_COLUMNS),
                records=rows,
            )
            await conn.copy_records_to_table(
                "durable_edges", columns=(*FLOOR_EDGE_COLUMNS, "to_resource_id"), records=edges
            )

    async def reset() -> None:
        nonlocal rows, edges, lineage
        rows, edges, lineage = floor_rows(body)

    async def backends() -> list[int]:
        async with env.pool.acquire() as conn:
            return [
                r["pid"]
                for r in await conn.fetch(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                )
            ]

    cpu: dict[str, float] = {"candidate": 0.0, "floor": 0.0}

    def counted(side: str, work: Callable[[], Awaitable[None]], own: Callable[[], float]) -> Any:
        """`work`, its CPU seconds (this side's process and the database's backends) added
        to cpu[side]: what a loaded machine changes least."""

        async def run() -> None:
            pids = await backends()
            before, mine = own(), _cpu_of(pids)
            await work()
            after, theirs = own(), _cpu_of(pids)
            # a backend that ended meanwhile (another session's) is left out
            cpu[side] += (
                after - before + sum(theirs[pid] - mine[pid] for pid in theirs if pid in mine)
            )

        return run

    cand, base = await alternate(
        counted("candidate", candidate, lambda: process_cpu(env.server_pid)),
        counted("floor", floor, time.process_time),
        env.size.runs,
        reset=reset,
    )
    async with env.pool.acquire() as conn:
        copied = await conn.fetchval("SELECT count(*) FROM durable_resources")
        stored = await conn.fetchval(
            """SELECT count(*) FROM states s JOIN resources r ON r.state_id = s.id
               WHERE s.name = 'bench/floor-0'"""
        )
        await conn.execute("DROP TABLE durable_versions, durable_resources, durable_edges")
    if (stored, copied) != (instances, instances * env.size.runs):
        raise BenchError(f"durable floor: {stored} rows stored, {copied} copied")
    ratio = cand / base
    return Result(
        "import vs durable floor",
        f"POST {instances:,}-instance state ({len(body) / 1e6:.1f} MB) to /states",
        "parse (orjson) + COPY rows and edges into plain tables, no indexes",
        cand,
        base,
        "ratio <= 2.0",
        ratio <= 2.0,
        env.size.runs,
        {"edges": len(edges), "cpu_ratio": round(cpu["candidate"] / max(cpu["floor"], 1e-9), 2)},
    )


async def _post_all(url: str, bodies: dict[str, bytes]) -> float:
    """Seconds until every body is stored, all posted at once on their own connections."""
    client = Client(url, connections=len(bodies))
    try:
        started = time.perf_counter()
        await asyncio.gather(
            *(client.post(f"/states/{name}", content=body) for name, body in bodies.items())
        )
        seconds = time.perf_counter() - started
        for name in bodies:
            _ok(await client.get(f"/states/{name}"))
    finally:
        await client.aclose()
    return seconds


async def _on_fresh_server(env: Env, bodies: dict[str, bytes]) -> tuple[float, int]:
    """(seconds, the server's peak RSS) of posting `bodies` at once to a server of its own."""
    settings: dict[str, Any] = {"INFRAGRAPH_API_TOKENS": None}
    with live_server(env.database_url, settings, timeout=60) as server:
        seconds = await _post_all(server.url, bodies)
        return seconds, _peak_rss_bytes(server.process.pid)


async def two_imports_case(env: Env) -> Result:
    instances = env.size.big_instances
    body = dumps(generate_state(instances))
    tag = uuid.uuid4().hex[:6]
    ones, twos, peaks = [], [], []
    for run in range(max(1, env.size.runs // 2)):
        seconds, _ = await _on_fresh_server(env, {f"bench/one-{tag}-{run}": body})
        ones.append(seconds)
        both = {f"bench/two-{tag}-{run}-{n}": body for n in range(2)}
        seconds, peak = await _on_fresh_server(env, both)
        twos.append(seconds)
        peaks.append(peak)
    # the best of the runs (a loaded machine only ever adds), the highest peak
    one, two, peak = min(ones), min(twos), max(peaks)
    peak_x = peak / len(body)
    return Result(
        "two big imports at once",
        f"2 x POST {instances:,} instances ({len(body) / 1e6:.0f} MB) at once, fresh server",
        "one such POST alone on a fresh server",
        two,
        one,
        "wall ratio <= 2.2, peak RSS <= 2.5 x one body",
        two / one <= 2.2 and peak_x <= 2.5,
        len(ones),
        {"peak_rss_x_body": round(peak_x, 3)},
    )
