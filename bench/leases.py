"""The lease cases, on a state of `plan_resources` instances (5,000 at full size).

- 8 jobs, each holding its lock HOLD_S (standing in for the cloud API's time) and
  writing one changed instance: under disjoint leases (acquire, LOCK, GET the snapshot,
  hold, POST merged, UNLOCK; all at once) against the same 8 under the whole-state lock
  (each LOCK retried until it is free, as `-lock-timeout` does; GET, hold, POST, UNLOCK).
- A merged write (POST under a lease) against a plain POST of the same change.

Each job's own work on its state (Terraform's: read the state it got, write the next
one) runs in a process of its own, as each job's Terraform runs on a CI runner of its
own: in this process the 8 jobs' JSON would wait for one another, which no real run of
them does. Both cases do it so.
"""

import asyncio
import contextlib
import datetime as dt
import multiprocessing
import statistics
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from app.jsonutil import dumps, read
from app.leases.footprint import lease_plan
from bench.cases import BenchError, Env, _ok, graphql
from bench.generate import generate_state
from bench.harness import Result, alternate
from bench.lease_jobs import changed, instances, next_state, warm

STATE, MERGED = "bench/leased", "bench/merged"
JOBS = 8
LOCK_RETRY_S = 0.05
ACQUIRE = """mutation($state: String!, $plan: JSON!) {
  acquireLease(state: $state, plan: $plan) { id } }"""
RELEASE = """mutation($id: ID!) { releaseLease(id: $id) { id } }"""


def _hold_s(env: Env) -> float:
    return 2.0 if env.size.plan_resources >= 5000 else 0.05


def _plan(state: dict[str, Any], address: str) -> dict[str, Any]:
    """A plan updating the instance at `address` of `state` (a new tag)."""
    prior, changes = [], []
    for found, r, i in instances(state):
        values = i["attributes"]
        prior.append({"address": found, "mode": r["mode"], "type": r["type"], "values": values})
        if found == address:
            changes.append(
                {
                    "address": found,
                    "mode": r["mode"],
                    "type": r["type"],
                    "name": r["name"],
                    "provider_name": "registry.terraform.io/hashicorp/aws",
                    "change": {
                        "actions": ["update"],
                        "before": values,
                        "after": {**values, "tags": {"leased": "yes"}},
                        "after_unknown": {},
                    },
                }
            )
    return {
        "format_version": "1.2",
        "terraform_version": "1.15.5",
        "resource_changes": changes,
        "output_changes": {},
        "prior_state": {"format_version": "1.0", "values": {"root_module": {"resources": prior}}},
    }


@contextlib.asynccontextmanager
async def _runners() -> AsyncIterator[Callable[[bytes, str, str], Awaitable[bytes]]]:
    """One process per job (started before any is timed): what makes a job's next state."""
    with ProcessPoolExecutor(JOBS, mp_context=multiprocessing.get_context("spawn")) as pool:
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(pool, warm) for _ in range(JOBS)))

        async def job_state(data: bytes, address: str, value: str) -> bytes:
            return await loop.run_in_executor(pool, next_state, data, address, value)

        yield job_state


async def _acquire(env: Env, state: str, plan: dict[str, Any]) -> str:
    """acquireLease as `infragraph lease acquire` asks it: the plan reduced to what a
    lease reads of it (app/leases/footprint.py: lease_plan), its request encoded as fast
    as Terraform writes a plan's JSON (the client's JSON encoder is no part of what a
    job waits for)."""
    body = dumps({"query": ACQUIRE, "variables": {"state": state, "plan": lease_plan(plan)}})
    answer = _ok(
        await env.http.post("/graphql", content=body, headers={"content-type": "application/json"})
    ).json()
    if answer.get("errors"):
        raise BenchError(f"GraphQL errors: {answer['errors']}")
    lease_id: str = answer["data"]["acquireLease"]["id"]
    return lease_id


async def _post(env: Env, path: str, body: bytes) -> None:
    """POST, retried once on a connection the server closed meanwhile (a client waiting on
    a busy machine can find its kept-alive socket closed), as Terraform's client retries."""
    try:
        _ok(await env.http.post(path, content=body))
    except (BrokenPipeError, ConnectionResetError):
        _ok(await env.http.post(path, content=body))


def _lock_info() -> dict[str, str]:
    return {
        "ID": str(uuid.uuid4()),
        "Operation": "OperationTypeApply",
        "Who": "bench@ci",
        "Version": "1.15.5",
        "Created": dt.datetime.now(dt.UTC).isoformat(),
    }


async def _setup(env: Env, name: str) -> tuple[dict[str, Any], list[str]]:
    state = generate_state(env.size.plan_resources, seed=7)
    _ok(await env.http.post(f"/states/{name}", content=dumps(state)))
    addresses = [a for a, r, _ in instances(state) if r["mode"] == "managed"]
    step = len(addresses) // JOBS
    return state, [addresses[n * step] for n in range(JOBS)]


async def _head(env: Env, name: str = STATE) -> dict[str, Any]:
    document: dict[str, Any] = read(_ok(await env.http.get(f"/states/{name}")).content)
    return document


async def leases_case(env: Env) -> Result:
    async with _runners() as job_state:
        return await _leases_case(env, job_state)


async def _leases_case(
    env: Env, job_state: Callable[[bytes, str, str], Awaitable[bytes]]
) -> Result:
    await _setup(env, STATE)
    hold = _hold_s(env)
    url = f"/states/{STATE}"
    run = [0]
    acquired: list[float] = []
    # per run: from the last acquire to the last job's hold, and from there to the end
    to_hold: list[float] = []
    writes: list[float] = []
    marks: dict[str, float] = {}

    async def leased_job(address: str, lease: str) -> None:
        under = f"?lease={lease}"
        info = _lock_info()
        _ok(await env.http.request("LOCK", f"{url}/lock{under}", json=info))
        snapshot = _ok(await env.http.get(url + under)).content
        body = await job_state(snapshot, address, f"lease-{run[0]}")
        marks["held"] = max(marks.get("held", 0.0), time.perf_counter())
        await asyncio.sleep(hold)
        await _post(env, f"{url}{under}&ID={info['ID']}", body)
        _ok(await env.http.request("UNLOCK", f"{url}/lock{under}", json=info))

    async def candidate() -> None:
        run[0] += 1
        head = await _head(env)  # what the plans are made from (as the jobs' addresses)
        addresses = _addresses_of(head)
        leases = []
        started = time.perf_counter()
        for address in addresses:  # each CI job leases its plan, then all apply at once
            leases.append(await _acquire(env, STATE, _plan(head, address)))
        acquired.append(time.perf_counter() - started)
        marks.clear()
        start = time.perf_counter()
        await asyncio.gather(*(leased_job(a, n) for a, n in zip(addresses, leases, strict=True)))
        to_hold.append(marks["held"] - start)
        writes.append(time.perf_counter() - marks["held"] - hold)

    async def locked_job(address: str) -> None:
        info = _lock_info()
        while True:
            answer = await env.http.request("LOCK", f"{url}/lock", json=info)
            if answer.status_code == 200:
                break
            if answer.status_code != 409:
                raise BenchError(f"LOCK: {answer.status_code} {answer.text[:300]}")
            await asyncio.sleep(LOCK_RETRY_S)
        body = await job_state(_ok(await env.http.get(url)).content, address, "lock")
        await asyncio.sleep(hold)
        await _post(env, f"{url}?ID={info['ID']}", body)
        _ok(await env.http.request("UNLOCK", f"{url}/lock", json=info))

    async def baseline() -> None:
        await asyncio.gather(*(locked_job(a) for a in await _job_addresses(env)))

    cand, base = await alternate(candidate, baseline, max(1, env.size.runs // 2))
    head = await _head(env)
    tags = {a: i["attributes"].get("tags") for a, _, i in instances(head)}
    addresses = await _job_addresses(env)
    if any(tags[a] != {"job": "lock"} for a in addresses):
        raise BenchError("the whole-state jobs' changes are not all in the head")
    ratio = cand / base if base else 0.0
    return Result(
        "leases, 8 jobs",
        f"{JOBS} jobs under disjoint leases, each holding {hold:g} s and writing 1 of "
        f"{env.size.plan_resources:,} instances",
        f"the same {JOBS} jobs under the whole-state lock (LOCK retried every "
        f"{LOCK_RETRY_S * 1000:g} ms)",
        cand,
        base,
        "ratio <= 0.35",
        ratio <= 0.35,
        max(1, env.size.runs // 2),
        {
            "hold_s": hold,
            "acquire_8_s": round(statistics.median(acquired), 2),
            "to_hold_s": round(statistics.median(to_hold), 2),
            "writes_s": round(statistics.median(writes), 2),
        },
    )


async def _job_addresses(env: Env) -> list[str]:
    return _addresses_of(await _head(env))


def _addresses_of(head: dict[str, Any]) -> list[str]:
    """The instance each job changes."""
    addresses = [a for a, r, _ in instances(head) if r["mode"] == "managed"]
    step = len(addresses) // JOBS
    return [addresses[n * step] for n in range(JOBS)]


async def merged_write_case(env: Env) -> Result:
    state, addresses = await _setup(env, MERGED)
    mine, theirs = addresses[0], addresses[1]
    lease = await _acquire(env, MERGED, _plan(state, mine))
    under = f"/states/{MERGED}?lease={lease}"
    view = read(_ok(await env.http.get(under)).content)
    run = [0]
    serials: list[int] = []

    async def candidate() -> None:
        nonlocal view
        run[0] += 1
        body = changed(view, mine, f"merged-{run[0]}")
        serials.append(_ok(await env.http.post(under, content=body)).json()["serial"])

    async def baseline() -> None:
        body = changed(await _head(env, MERGED), theirs, f"plain-{run[0]}")
        _ok(await env.http.post(f"/states/{MERGED}", content=body))

    cand, base = await alternate(candidate, baseline, env.size.runs)
    head = await _head(env, MERGED)
    tags = {a: i["attributes"].get("tags") for a, _, i in instances(head)}
    if tags[mine] != {"job": f"merged-{run[0]}"} or tags[theirs] != {"job": f"plain-{run[0]}"}:
        raise BenchError(f"merged writes lost: {tags[mine]}, {tags[theirs]}")
    await graphql(env, RELEASE, id=lease)
    ratio = cand / base if base else 0.0
    return Result(
        "leases, merged write",
        f"POST under a lease: 1 changed instance of {env.size.plan_resources:,}, merged",
        "a plain POST of the same change",
        cand,
        base,
        "ratio <= 1.5",
        ratio <= 1.5,
        env.size.runs,
        {"serials": len(serials)},
    )


LEASES_GROUP = (leases_case, merged_write_case)
