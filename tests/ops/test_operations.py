"""What an operator relies on: health, /metrics, request ids and JSON logs, a clean
500 for a bug, graceful shutdown, migrations in the wheel, the Docker image."""

import asyncio
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app import db
from app.observe import UNEXPECTED
from tests.helpers.backend import tf_state
from tests.helpers.live_server import ROOT, LiveServer, live_server, requests_in_flight
from tests.helpers.states import resource, state
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.slow  # starts servers of its own


async def test_health_paths(client, conn) -> None:
    assert (await client.get("/livez")).json() == {"status": "ok"}
    assert (await client.get("/readyz")).json() == {"status": "ok"}
    assert (await client.get("/healthz")).json() == {"status": "ok"}


async def test_readyz_reports_pending_migrations(client, app, conn) -> None:
    last = db.migration_files()[-1].name
    await conn.execute("DELETE FROM schema_migrations WHERE name = $1", last)
    try:
        response = await client.get("/readyz")
        assert response.status_code == 503
        assert response.json() == {"status": "migrations pending", "pending": [last]}
        assert (await client.get("/livez")).status_code == 200
    finally:
        await conn.execute("INSERT INTO schema_migrations (name) VALUES ($1)", last)


async def test_health_does_not_wait_for_the_request_pool(client, app, conn) -> None:
    pool = app.state.pool
    # who may call is known before the pool runs dry (the token cache's last word holds
    # through an outage; with none yet, a request meets the outage before GraphQL does)
    assert (await client.post("/graphql", json={"query": "{ __typename }"})).is_success
    held = [await pool.pool.acquire() for _ in range(pool.get_max_size())]
    try:
        assert (await client.get("/readyz")).status_code == 200
        # the request pool is exhausted: a request waits pool_timeout_s, then 503
        app.state.pool.acquire_timeout = 0.2
        response = await client.get("/states/x")
        assert response.status_code == 503
        assert response.json()["code"] == "UNAVAILABLE"
        assert response.headers["Retry-After"] == "1"
        body = (
            await client.post("/graphql", json={"query": '{ state(name: "x") { name } }'})
        ).json()
        assert body["errors"][0]["extensions"]["code"] == "UNAVAILABLE"
    finally:
        app.state.pool.acquire_timeout = app.state.settings.pool_timeout_s
        for held_conn in held:
            await pool.release(held_conn)


async def test_metrics_are_parsed_by_prometheus_client(client, conn) -> None:
    body = tf_state()
    assert (await client.post("/states/m", content=body)).status_code == 200
    assert (await client.get("/states/nope")).status_code == 404
    text = (await client.get("/metrics")).text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    requests = {
        (s.labels["route"], s.labels["method"], s.labels["status"]): s.value
        for s in families["infragraph_http_requests"].samples
        if s.name.endswith("_total")
    }
    assert requests[("/states/{name:path}", "POST", "200")] >= 1
    assert requests[("/states/{name:path}", "GET", "404")] >= 1
    latency = families["infragraph_http_request_duration_seconds"]
    assert any(s.name.endswith("_count") and s.value >= 1 for s in latency.samples)
    pool = {s.labels["state"]: s.value for s in families["infragraph_db_pool_connections"].samples}
    assert set(pool) == {"in_use", "idle", "waiting"}
    writes = {
        s.labels["result"]: s.value
        for s in families["infragraph_state_writes"].samples
        if s.name.endswith("_total")
    }
    assert writes["created"] >= 1
    imported = [
        s.value for s in families["infragraph_import_bytes"].samples if s.name.endswith("_total")
    ]
    assert imported[0] >= len(body)
    for name in (
        "infragraph_lock_conflicts",
        "infragraph_unexpected_errors",
        "infragraph_database_unavailable",
    ):
        assert name in families


async def test_a_bug_is_a_clean_500_logged_once_with_its_request_id(
    client, conn, caplog, monkeypatch
) -> None:
    async def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr("app.graph.raw.raw_version", broken)
    before = UNEXPECTED._value.get()
    with caplog.at_level(logging.ERROR, logger="infragraph"):
        response = await client.get("/states/x", headers={"X-Request-ID": "req-42"})
    assert response.status_code == 500
    assert response.headers["Connection"] == "close"
    assert response.headers["X-Request-ID"] == "req-42"
    assert response.json() == {
        "error": "internal server error",
        "code": "INTERNAL",
        "request_id": "req-42",
    }
    assert "secret" not in response.text
    [record] = [r for r in caplog.records if r.exc_info]
    assert "req-42" in record.getMessage()
    assert UNEXPECTED._value.get() == before + 1


async def test_request_ids_are_made_when_missing_or_insane(client, conn) -> None:
    made = (await client.get("/livez")).headers["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", made)
    assert (await client.get("/livez", headers={"X-Request-ID": "a b\tc"})).headers[
        "X-Request-ID"
    ] != "a b\tc"


def test_json_logs_carry_request_ids(database_url) -> None:
    with live_server(database_url, {"INFRAGRAPH_LOG_FORMAT": "json"}) as server:
        response = httpx.get(f"{server.url}/states/nope", headers={"X-Request-ID": "trace-7"})
        assert response.status_code == 404
        server.stop()
        log = server.log()
    records = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert records and all({"time", "level", "logger", "message"} <= set(r) for r in records)
    [access] = [
        r for r in records if r["logger"] == "uvicorn.access" and "/states/nope" in r["message"]
    ]
    assert access["request_id"] == "trace-7"
    non_json = [line for line in log.splitlines() if line.strip() and not line.startswith("{")]
    assert non_json == []


def test_sigterm_drains_an_in_flight_write(database_url) -> None:
    body = state([resource("aws_vpc", "v", attributes={"pad": "x" * 200_000})])

    async def scenario(server: LiveServer) -> httpx.Response:
        async def slow_body():
            yield body[:1000]
            # the rest once the server is shutting down, this request in flight
            await wait_until(lambda: "Shutting down" in server.log(), "the server to stop")
            yield body[1000:]

        async with httpx.AsyncClient(
            base_url=server.url, timeout=30, headers={"Content-Type": "application/json"}
        ) as client:
            task = asyncio.create_task(
                client.post(
                    "/states/drain", content=slow_body(), headers={"Content-Length": str(len(body))}
                )
            )

            async def writing() -> bool:  # the write, and the /metrics request asking
                return await requests_in_flight(client) == 2

            await wait_until(writing, "the write to be in flight")
            server.process.send_signal(signal.SIGTERM)
            return await task

    with live_server(database_url) as server:
        response = asyncio.run(scenario(server))
        server.process.wait(timeout=30)
        assert not server.server_errors(), server.log()
    assert response.status_code == 200, response.text
    assert response.json()["created"] is True

    with live_server(database_url) as again:  # what was stored, served by a fresh server
        assert httpx.get(f"{again.url}/states/drain").content == body


async def test_migrate_fails_loudly_without_migrations(conn, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="no migrations found"):
        await db.migrate(conn, tmp_path)


def uv_program() -> str:
    """The uv running these tests: `uv run` names itself in UV (PATH need not hold it)."""
    found = os.environ.get("UV") or shutil.which("uv")
    assert found, "building the wheel needs uv: run the tests with `uv run pytest`"
    return found


def test_the_installed_wheel_carries_its_migrations(tmp_path: Path) -> None:
    subprocess.run(
        [uv_program(), "build", "--wheel", "--out-dir", str(tmp_path)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    [wheel] = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    sources = sorted(p.name for p in (ROOT / "migrations").glob("*.sql"))
    assert sorted(Path(n).name for n in names if n.startswith("app/migrations/")) == sources
    graphiql = ROOT / "app" / "api" / "graphiql"  # GraphiQL's files, served offline
    shipped = {str(p.relative_to(ROOT)) for p in graphiql.rglob("*") if p.is_file()}
    assert shipped and shipped <= set(names)
    installed = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(installed)  # what an installer lays out for a pure wheel
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            "from app import db; print(db.MIGRATIONS_DIR); print(len(db.migration_files()))",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(installed)},
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert found == [str(installed / "app" / "migrations"), str(len(sources))]


def test_the_image_is_pinned_non_root_and_checks_its_health() -> None:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")  # continued lines joined
    lines = [line.strip() for line in text.splitlines()]
    bases = [line.split()[1] for line in lines if line.startswith("FROM ")]
    copied = [line.split("--from=")[1].split()[0] for line in lines if "--from=" in line]
    for image in bases + copied:
        assert re.search(r":\d+\.\d+(\.\d+)?[\w.-]*$|@sha256:", image), f"{image} is not pinned"
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0")
    assert any(line.startswith("HEALTHCHECK") and "/readyz" in line for line in lines)
