"""`uv run python -m bench [--tiny] [--only GROUP ...]`: every case against a fresh
database and a fresh server, a table on stdout and bench/results.json."""

import argparse
import asyncio
import contextlib
import json
import os
import platform
import sys
import time
import urllib.parse
import uuid
from pathlib import Path

import asyncpg

from app import db
from app.config import Settings
from bench.cases import FULL, GROUPS, TINY, Env, Size
from bench.harness import Result, table
from bench.http import Client
from tests.helpers.live_server import live_server

RESULTS = Path(__file__).resolve().parent / "results.json"


def bench_url(admin_url: str, name: str) -> str:
    """`admin_url` pointed at database `name`. Candidate and baseline connect through
    app.db.create_pool, so both run with its settings (JIT off among them)."""
    return urllib.parse.urlunsplit(urllib.parse.urlsplit(admin_url)._replace(path=f"/{name}"))


async def run_group(admin_url: str, group: str, size: Size) -> list[Result]:
    """One group of cases on its own fresh database and server."""
    name = f"infragraph_bench_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(admin_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = bench_url(admin_url, name)
    try:
        # webhook receivers are on loopback, over http (bench/webhooks.py)
        settings = {
            "INFRAGRAPH_API_TOKENS": None,
            "INFRAGRAPH_WEBHOOK_ALLOW_HTTP": "1",
            "INFRAGRAPH_WEBHOOK_ALLOW_PRIVATE": "1",
        }
        with live_server(url, settings, timeout=60) as server:
            pool = await db.create_pool(url, min_size=1, max_size=20, statement_timeout_ms=600_000)
            http = Client(server.url, connections=32)
            env = Env(http, pool, server.process.pid, size, url)
            results = []
            try:  # a case that fails leaves no connection open behind it
                for case in GROUPS[group]:
                    started = time.perf_counter()
                    outcome = await case(env)  # a Result, or a list of them
                    for result in outcome if isinstance(outcome, list) else [outcome]:
                        seconds = time.perf_counter() - started
                        print(f"  {result.case}: {seconds:.1f}s", file=sys.stderr)
                        results.append(result)
            finally:
                await http.aclose()
                await pool.close()
        return results
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


def _cpu_model() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    return platform.processor() or "unknown CPU"


async def machine(admin_url: str) -> str:
    """What the numbers were measured on."""
    conn = await asyncpg.connect(admin_url)
    try:
        server = await conn.fetchval("SHOW server_version")
    finally:
        await conn.close()
    host = urllib.parse.urlsplit(admin_url).hostname or "a local socket"
    return (
        f"{platform.machine()}, {os.cpu_count()} cores ({_cpu_model()}), "
        f"Python {platform.python_version()}, PostgreSQL {server} at {host}"
    )


async def run(groups: list[str], size: Size, admin_url: str) -> list[Result]:
    results: list[Result] = []
    for group in groups:
        print(f"{group} ...", file=sys.stderr)
        results.extend(await run_group(admin_url, group, size))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--tiny", action="store_true", help="tiny sizes, one run (a smoke test)")
    parser.add_argument("--only", nargs="*", choices=sorted(GROUPS), default=sorted(GROUPS))
    args = parser.parse_args()
    size = TINY if args.tiny else FULL
    admin_url = db.database_url(Settings.from_env())
    started = time.perf_counter()
    results = asyncio.run(run(args.only, size, admin_url))
    measured_on = asyncio.run(machine(admin_url))
    elapsed = time.perf_counter() - started
    print(table(results))
    print(f"\n{measured_on}; {elapsed:.0f} s in all")
    RESULTS.write_text(
        json.dumps(
            {
                "machine": measured_on,
                "seconds": round(elapsed),
                "size": size.__dict__,
                "results": [r.as_json() for r in results],
            },
            indent=2,
        )
    )
    return 0 if all(r.met for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
