"""A PostgreSQL this test starts itself (never the shared one) is stopped under
load and started again: every answer meanwhile is 2xx or 503 / UNAVAILABLE, the
outage is one log line, and the server recovers without a restart."""

import asyncio
import itertools
import tempfile
import time
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app import db
from app.tfstate.parse import MAX_SERIAL
from tests.helpers.backend import lock_info, tf_state
from tests.helpers.live_server import LiveServer, live_server
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.slow  # starts servers of its own

WORKERS = 8
OUTAGE_S = 3.0
ANSWERS = 5 * WORKERS  # answered requests that show a phase under way


class OwnPostgres:
    """An embedded PostgreSQL on a unix socket in a temporary directory."""

    def __init__(self, pgdata: Path) -> None:
        pgserver = db.import_pgserver()
        self.pg_ctl = pgserver.pg_ctl
        self.pgdata = pgdata
        self.server = pgserver.get_server(pgdata, cleanup_mode="delete")
        self.url = self.server.get_uri()
        self.socket_dir = urllib.parse.parse_qs(urllib.parse.urlparse(self.url).query)["host"][0]

    def stop(self) -> None:
        self.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=self.server.system_user)

    def start(self) -> None:
        args = [
            "-w",
            "-o",
            '-h ""',
            "-o",
            f"-k {self.socket_dir}",
            "-l",
            str(self.pgdata / "log"),
            "start",
        ]
        self.pg_ctl(args, pgdata=self.pgdata, user=self.server.system_user)


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[OwnPostgres]:
    with tempfile.TemporaryDirectory(prefix="infragraph-fault-") as home:
        postgres = OwnPostgres(Path(home) / "pgdata")
        try:
            yield postgres
        finally:
            postgres.server.cleanup()


def _outcome(response: httpx.Response) -> str:
    """ok, unavailable, or what went wrong."""
    if response.status_code == 503:
        return "unavailable" if response.json()["code"] == "UNAVAILABLE" else "503 without code"
    if response.status_code >= 300 and response.status_code != 409:
        return f"HTTP {response.status_code}: {response.text[:200]}"
    if response.request.url.path == "/graphql":
        codes = {e["extensions"]["code"] for e in response.json().get("errors", ())}
        if codes and codes != {"UNAVAILABLE"}:
            return f"GraphQL {codes}"
        return "unavailable" if codes else "ok"
    return "ok"


async def _worker(server: LiveServer, index: int, stop: asyncio.Event, seen: Counter[str]) -> None:
    name = f"fault/{index}"
    serials = itertools.count(1)
    serial = next(serials)
    async with httpx.AsyncClient(
        base_url=server.url, timeout=30, headers={"Content-Type": "application/json"}
    ) as client:
        while not stop.is_set():
            posted = await client.post(f"/states/{name}", content=tf_state(serial=serial))
            seen[_outcome(posted)] += 1
            if posted.status_code == 200:  # else the same body again, as Terraform retries
                serial = min(next(serials), MAX_SERIAL)
            for response in (
                await client.get(f"/states/{name}"),
                await client.request("LOCK", f"/states/{name}/lock", json=lock_info(f"l{index}")),
                await client.request("UNLOCK", f"/states/{name}/lock", json=lock_info(f"l{index}")),
                await client.post(
                    "/graphql",
                    json={"query": "{ states(first: 5) { totalCount edges { node { name } } } }"},
                ),
                await client.get("/scopes/none/tables/iac/state"),
            ):
                outcome = _outcome(response)
                if response.status_code == 404 and response.request.url.path.startswith("/scopes"):
                    outcome = "ok"  # no such scope: the database answered
                seen[outcome] += 1


async def _load(server: LiveServer, postgres: OwnPostgres) -> tuple[Counter[str], Counter[str]]:
    before_restart: Counter[str] = Counter()
    stop = asyncio.Event()
    workers = [
        asyncio.create_task(_worker(server, i, stop, before_restart)) for i in range(WORKERS)
    ]
    await wait_until(lambda: before_restart["ok"] >= ANSWERS, "answers before the outage")
    await asyncio.to_thread(postgres.stop)
    await wait_until(lambda: before_restart["unavailable"] >= WORKERS, "503s in the outage")
    await asyncio.sleep(OUTAGE_S)  # how long the database stays down: a duration, not a check
    await asyncio.to_thread(postgres.start)
    ok_then = before_restart["ok"]
    await wait_until(lambda: before_restart["ok"] >= ok_then + ANSWERS, "answers again")
    stop.set()
    await asyncio.gather(*workers)
    after: Counter[str] = Counter()  # the same server, no restart: everything works again
    stop = asyncio.Event()
    workers = [asyncio.create_task(_worker(server, i, stop, after)) for i in range(WORKERS)]
    await wait_until(lambda: after["ok"] >= ANSWERS, "answers after the recovery")
    stop.set()
    await asyncio.gather(*workers)
    return before_restart, after


def test_a_lost_database_is_503_and_recovery_needs_no_restart(own_postgres: OwnPostgres) -> None:
    with live_server(own_postgres.url, {"INFRAGRAPH_POOL_TIMEOUT_S": "1"}) as server:
        began = time.monotonic()
        during, after = asyncio.run(_load(server, own_postgres))
        log = server.log()
        errors = [line for line in server.server_errors() if '" 503 ' not in line]
    assert set(during) == {"ok", "unavailable"}, (during, log)
    assert during["unavailable"] > 0 and during["ok"] > 0
    assert set(after) == {"ok"}, after
    assert errors == [], log
    assert log.count("database unavailable") == 1, log
    assert log.count("database available again") == 1, log
    assert time.monotonic() - began < 60
