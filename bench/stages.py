"""`uv run python -m bench.stages [--instances N] [--runs R]`: where a first import's time
goes, stage by stage, each beside its floor, in one process against a fresh database.

The write is the server's own (the body decoded as a POST decodes it, then
`locks.guarded_write`, the cyclic GC paused as the server pauses it); each stage is
timed by wrapping the functions that do it, so the stages add up to the write less
what the table calls "other" (the statements between them, the event loop). The floor
is what a store that keeps the body and its graph must do at least: the body parsed
(orjson), its bytes inserted whole, its instance rows and edges COPYed into plain
durable tables without indexes, in one transaction. Rows are built for the floor
outside its timing, as the benchmark's baselines build them.

Each figure is the median over the runs (a fresh state each), in milliseconds.
"""

import argparse
import asyncio
import collections
import contextlib
import functools
import gc
import hashlib
import os
import statistics
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import asyncpg
import orjson

from app import db
from app.access import Principal, Role
from app.backend.protocol import decode_state
from app.config import Settings
from app.graph import links, locks, policies
from app.graph.raw import Body
from app.graph.write import edges as write_edges
from app.graph.write import outputs as write_outputs
from app.graph.write import stream
from app.graph.write import version as write_version
from app.jsonutil import dumps
from app.tfstate import INSTANCE_COLUMNS, parse_state
from app.tfstate import scan as tfscan
from app.tfstate import stream as tfstream
from app.tfstate.digest import instance_digest
from bench.generate import generate_state

# (stage, what its floor is); the order the table prints them in
STAGES = (
    ("parse", "orjson.loads of the body"),
    ("hash", "blake2b of the body's bytes, once"),
    ("normalize", "-"),
    ("COPY rows", "COPY of the same rows into a plain table"),
    ("reduction", "-"),
    ("COPY edges", "COPY of the same edges into a plain table"),
    ("chunking and compression", "INSERT of the body's bytes whole"),
    ("outputs, links, lineage", "-"),
    ("policies, configuration", "-"),
    ("commit", "COMMIT of the floor's transaction"),
)

_FLOOR_TABLES = """
    DROP TABLE IF EXISTS floor_versions, floor_resources, floor_edges;
    CREATE TABLE floor_versions (id uuid, state_id uuid, serial bigint, lineage text,
                                 raw_state bytea, raw_md5 bytea);
    ALTER TABLE floor_versions ALTER raw_state SET STORAGE EXTERNAL;  -- stored, not compressed
    CREATE TABLE floor_resources (LIKE resources INCLUDING DEFAULTS);
    CREATE TABLE floor_edges (LIKE resource_dependencies INCLUDING DEFAULTS);
"""
FLOOR_RESOURCE_COLUMNS = ("id", "state_id", "state_version_id", "serial_from", "content_hash")
FLOOR_EDGE_COLUMNS = ("state_id", "state_version_id", "serial_from", "from_resource_id")


def process_cpu(pid: int | None) -> float:
    """CPU seconds of process `pid` so far (user and system; 0 without one)."""
    if pid is None:
        return 0.0
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_now(main: bool, backend: int | None) -> float:
    """In the event loop's thread: the process' CPU (a stage there may hand work to worker
    threads) and the backend's; in a worker thread: that thread's."""
    if main:
        return time.process_time() + process_cpu(backend)
    return time.thread_time()


class Clock:
    """Seconds spent in each stage, added up over one write: wall time, and CPU time (of
    the thread doing it, and of the PostgreSQL backend serving the connection, `backend`).
    CPU time is what a loaded machine changes least."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = collections.defaultdict(float)
        self.cpu: dict[str, float] = collections.defaultdict(float)
        self.backend: int | None = None
        self._depth = 0  # a stage inside another (a COPY in a timed function) counts once

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        outer = self._depth == 0 or threading.current_thread() is not threading.main_thread()
        if not outer:
            yield
            return
        main = threading.current_thread() is threading.main_thread()
        self._depth += main
        started = time.perf_counter()
        cpu = _cpu_now(main, self.backend)
        try:
            yield
        finally:
            self._depth -= main
            self.spent[name] += time.perf_counter() - started
            now = _cpu_now(main, self.backend)
            self.cpu[name] += now - cpu

    def totals(self, wall: float, cpu: float) -> dict[str, float]:
        """Each stage's wall seconds by its name and CPU seconds as "cpu:" and its name;
        "other": what no stage took, "total": the whole."""
        spent = {**self.spent, **{f"cpu:{name}": value for name, value in self.cpu.items()}}
        spent["other"] = wall - sum(self.spent.values())
        spent["cpu:other"] = cpu - sum(self.cpu.values())
        spent["total"], spent["cpu:total"] = wall, cpu
        return spent

    def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        if asyncio.iscoroutinefunction(function):

            @functools.wraps(function)
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                with self.stage(name):
                    return await function(*args, **kwargs)

            return timed_async

        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.stage(name):
                return function(*args, **kwargs)

        return timed


@contextlib.contextmanager
def _patched(clock: Clock) -> Iterator[None]:
    """Each stage's functions timed where the write looks them up."""
    copy = asyncpg.Connection.copy_records_to_table
    execute = asyncpg.Connection.execute

    async def copy_timed(self: asyncpg.Connection, table: str, **kwargs: Any) -> Any:
        name = {"resources": "COPY rows", "resource_dependencies": "COPY edges"}.get(table)
        with clock.stage(name or "outputs, links, lineage"):
            return await copy(self, table, **kwargs)

    async def execute_timed(self: asyncpg.Connection, query: str, *args: Any, **kw: Any) -> Any:
        if query.strip().upper().startswith("COMMIT"):
            with clock.stage("commit"):
                return await execute(self, query, *args, **kw)
        return await execute(self, query, *args, **kw)

    def resources_timed(self: tfstream.StreamedDocument) -> Iterator[Any]:
        items = resources(self)
        while True:
            with clock.stage("parse"):
                item = next(items, _END)
            if item is _END:
                return
            yield item

    resources = tfstream.StreamedDocument.resources
    patches: list[tuple[Any, str, Any]] = [
        (asyncpg.Connection, "copy_records_to_table", copy_timed),
        (asyncpg.Connection, "execute", execute_timed),
        (tfstream.StreamedDocument, "resources", resources_timed),
        (tfscan, "_encode", clock.wrap("hash", tfscan._encode)),
        (tfscan.ScannedInstance, "row", clock.wrap("normalize", tfscan.ScannedInstance.row)),
        (stream, "stored_instance", clock.wrap("normalize", stream.stored_instance)),
        (stream.Stored, "digest", clock.wrap("normalize", stream.Stored.digest)),
        (write_edges, "declared_edges", clock.wrap("reduction", write_edges.declared_edges)),
        (
            write_version,
            "save_raw",
            clock.wrap("chunking and compression", write_version.save_raw),
        ),
        (
            write_outputs,
            "write_value_digests",
            clock.wrap("outputs, links, lineage", write_outputs.write_value_digests),
        ),
        (links, "write_links", clock.wrap("outputs, links, lineage", links.write_links)),
        (links, "write_lineage", clock.wrap("outputs, links, lineage", links.write_lineage)),
        (policies, "check_write", clock.wrap("policies, configuration", policies.check_write)),
        (
            write_version,
            "configure_version",
            clock.wrap("policies, configuration", write_version.configure_version),
        ),
    ]
    saved = [(owner, attr, getattr(owner, attr)) for owner, attr, _ in patches]
    for owner, attr, new in patches:
        setattr(owner, attr, new)
    try:
        yield
    finally:
        for owner, attr, old in saved:
            setattr(owner, attr, old)


_END = object()
_WRITER = Principal("bench", Role.ADMIN)


async def timed_write(pool: db.Pool, name: str, body: bytes, stream_over: int) -> dict[str, float]:
    """The server's write of `body` as state `name`, by stage (seconds), "total" included."""
    clock = Clock()
    raw = Body.of(body)
    gc.disable()  # as app.process.StateWrites does for a state POST
    try:
        with _patched(clock):
            started = time.perf_counter()
            with clock.stage("parse"):  # the document's head; its resources as the write reads them
                state = await asyncio.to_thread(decode_state, raw, stream_over)
            async with pool.acquire() as conn:
                clock.backend = conn.get_server_pid()
                cpu = time.process_time() + process_cpu(clock.backend)
                await locks.guarded_write(conn, name, raw, None, state=state, who=_WRITER)
                cpu = time.process_time() + process_cpu(clock.backend) - cpu
            total = time.perf_counter() - started
    finally:
        gc.enable()
    return clock.totals(total, cpu + clock.cpu["parse"])


def floor_rows(body: bytes) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], str]:
    """The instance rows and edges the floor copies (built untimed), and the lineage."""
    state = parse_state(body)
    state_id, version_id = uuid.uuid4(), uuid.uuid4()
    ids = [uuid.uuid4() for _ in state.instances]
    rows = [
        (rid, state_id, version_id, state.serial, instance_digest(row), *row)
        for rid, row in zip(ids, state.instances, strict=True)
    ]
    edges = [(state_id, version_id, state.serial, ids[a], ids[b]) for a, b in state.edges]
    return rows, edges, state.lineage


async def timed_floor(
    conn: asyncpg.Connection,
    body: bytes,
    rows: list[tuple[Any, ...]],
    edges: list[tuple[Any, ...]],
    lineage: str,
) -> dict[str, float]:
    """The floor's work on `body` (seconds by stage, "total" included)."""
    clock = Clock()
    clock.backend = conn.get_server_pid()
    started = time.perf_counter()
    cpu = time.process_time() + process_cpu(clock.backend)
    with clock.stage("parse"):
        orjson.loads(body)
    with clock.stage("hash"):
        hashlib.blake2b(body, digest_size=16).digest()
    transaction = conn.transaction()
    await transaction.start()
    with clock.stage("chunking and compression"):
        await conn.execute(
            "INSERT INTO floor_versions VALUES ($1, $2, 1, $3, $4, $5)",
            rows[0][2] if rows else uuid.uuid4(),
            rows[0][1] if rows else uuid.uuid4(),
            lineage,
            body,
            hashlib.md5(body).digest(),
        )
    with clock.stage("COPY rows"):
        await conn.copy_records_to_table(
            "floor_resources", columns=(*FLOOR_RESOURCE_COLUMNS, *INSTANCE_COLUMNS), records=rows
        )
    with clock.stage("COPY edges"):
        await conn.copy_records_to_table(
            "floor_edges", columns=(*FLOOR_EDGE_COLUMNS, "to_resource_id"), records=edges
        )
    with clock.stage("commit"):
        await transaction.commit()
    cpu = time.process_time() + process_cpu(clock.backend) - cpu
    return clock.totals(time.perf_counter() - started, cpu)


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f}"


def table(write: dict[str, float], floor: dict[str, float]) -> str:
    """Wall and CPU milliseconds of each stage, the write's and its floor's; the ratio of
    their CPU times (what a loaded machine changes least)."""
    lines = [
        "| stage | write: wall, CPU (ms) | floor: wall, CPU (ms) | CPU ratio | the floor |",
        "| --- | --- | --- | --- | --- |",
    ]
    for stage, what in (*STAGES, ("other", "-"), ("total", "the floor's stages together")):
        cpu, base = write.get(f"cpu:{stage}", 0.0), floor.get(f"cpu:{stage}")
        ratio = f"{cpu / base:.1f}" if base else "-"
        floor_ms = "-" if base is None else f"{_ms(floor.get(stage))}, {_ms(base)}"
        lines.append(
            f"| {stage} | {_ms(write.get(stage, 0.0))}, {_ms(cpu)} | {floor_ms} | {ratio} "
            f"| {what} |"
        )
    return "\n".join(lines)


def _medians(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(run.get(key, 0.0) for run in runs) for key in runs[0]}


async def profile(
    admin_url: str, instances: int, runs: int
) -> tuple[str, dict[str, float], dict[str, float]]:
    """The table of medians, and the medians (seconds) of the write and of the floor."""
    name = f"infragraph_stages_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(admin_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = urllib.parse.urlunsplit(urllib.parse.urlsplit(admin_url)._replace(path=f"/{name}"))
    try:
        pool = await db.create_pool(url, min_size=1, max_size=2, statement_timeout_ms=600_000)
        try:
            async with pool.acquire() as conn:
                await db.migrate(conn)
                await conn.execute(_FLOOR_TABLES)
            body = dumps(generate_state(instances))
            rows, edges, lineage = floor_rows(body)
            stream_over = Settings.from_env().large_write_bytes
            writes, floors = [], []
            for run in range(runs):
                writes.append(await timed_write(pool, f"stages/{run}", body, stream_over))
                async with pool.acquire() as conn:
                    floors.append(await timed_floor(conn, body, rows, edges, lineage))
        finally:
            await pool.close()
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
    write, floor = _medians(writes), _medians(floors)
    heading = (
        f"first import of {instances:,} instances ({len(body) / 1e6:.1f} MB, {len(edges):,} "
        f"edges), median of {runs}; load {_load()}"
    )
    return f"{heading}\n\n{table(write, floor)}", write, floor


def _load() -> str:
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stages", description=__doc__)
    parser.add_argument("--instances", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    admin_url = db.database_url(Settings.from_env())
    text, write, floor = asyncio.run(profile(admin_url, args.instances, args.runs))
    print(text)
    print(
        f"\nthe write over the floor: {write['total'] / floor['total']:.2f} in wall time, "
        f"{write['cpu:total'] / floor['cpu:total']:.2f} in CPU time"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
