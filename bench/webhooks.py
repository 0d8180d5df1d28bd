"""The webhook cases: what queuing deliveries adds to a state write, and how fast the
server's worker drains a queue to a receiver on loopback (the benchmark's server allows
loopback receivers: bench/__main__.py)."""

import asyncio
import itertools
import statistics
import time

from app.webhooks import store
from app.webhooks.kinds import EventKind
from bench.cases import BenchError, Env, _ok
from bench.harness import Result, alternate
from tests.helpers.backend import tf_state
from tests.helpers.webhook_receiver import receiving

HOOKED = "bench/hooked"  # ten webhooks match it
PLAIN = "bench/plain"  # none does
WEBHOOKS = 10
SECRET = "bench-secret-0123456789"
# An address refused before any connection (TEST-NET): the writes' deliveries fail fast
# and wait minutes for their retry, without traffic.
NOWHERE = "https://192.0.2.1/hook"
# One write event, as app.graph.events.append_event inserts it; measured in a
# transaction rolled back, with and without webhooks matching.
_INSERT = """INSERT INTO events (state_name, action, actor, serial, detail)
             VALUES ($1, 'write', 'bench', 1, '{"resources": 1}')"""


async def queue_case(env: Env) -> Result:
    """A state write with 10 webhooks matching it, against the same write to a state
    none matches: the writes over HTTP, paired, and the event insert alone (its trigger
    queues the deliveries), the goal judged on the latter."""
    async with env.pool.acquire() as conn:
        for _ in range(WEBHOOKS):
            await store.create_webhook(
                conn,
                url=NOWHERE,
                kinds=[EventKind.STATE_WRITTEN],
                states=[f"{HOOKED}*"],
                secret=SECRET,
                form="json",
                created_by="bench",
            )
    runs = 20 * env.size.runs
    hooked, plain = itertools.count(1), itertools.count(1)

    async def candidate() -> None:
        _ok(await env.http.post(f"/states/{HOOKED}", content=tf_state(serial=next(hooked))))

    async def baseline() -> None:
        _ok(await env.http.post(f"/states/{PLAIN}", content=tf_state(serial=next(plain))))

    pairs = [await alternate(candidate, baseline, 1) for _ in range(runs)]
    cand = statistics.median(c for c, _ in pairs)
    base = statistics.median(b for _, b in pairs if b is not None)
    difference = statistics.median(c - b for c, b in pairs if b is not None)
    inserts = 10 * runs
    with_hooks = await _timed_insert(env, HOOKED, inserts)
    without = await _timed_insert(env, PLAIN, inserts)
    async with env.pool.acquire() as conn:
        queued = await conn.fetchval(
            "SELECT count(*) FROM webhook_deliveries WHERE state_name = $1", HOOKED
        )
        elsewhere = await conn.fetchval(
            "SELECT count(*) FROM webhook_deliveries WHERE state_name <> $1", HOOKED
        )
        await conn.execute("DELETE FROM webhooks")
    if queued != WEBHOOKS * runs or elsewhere:
        raise BenchError(f"webhook queue: {queued} queued for {runs} writes, {elsewhere} elsewhere")
    added = with_hooks - without
    return Result(
        "webhooks, queue",
        f"POST a small state {WEBHOOKS} webhooks match",
        "the same write to a state none matches",
        cand,
        base,
        "adds <= 1 ms (the deliveries queued in the write's transaction)",
        added <= 0.001,
        runs,
        {
            "added_ms": round(added * 1000, 3),
            "event_insert_ms": round(with_hooks * 1000, 3),
            "unmatched_event_insert_ms": round(without * 1000, 3),
            "paired_write_difference_ms": round(difference * 1000, 2),
        },
    )


async def _timed_insert(env: Env, name: str, runs: int) -> float:
    """Median seconds of one write event's insert for state `name` (its trigger queuing
    what matches), each in a transaction rolled back."""
    times = []
    async with env.pool.acquire() as conn:
        for _ in range(runs):
            transaction = conn.transaction()
            await transaction.start()
            try:
                started = time.perf_counter()
                await conn.execute(_INSERT, name)
                times.append(time.perf_counter() - started)
            finally:
                await transaction.rollback()
    return statistics.median(times)


async def drain_case(env: Env) -> Result:
    """1,000 deliveries queued at once (events of 100 states, in one transaction) to a
    receiver on loopback: from their commit to the last one received."""
    count = 1000 if env.size.runs > 1 else 100
    states = count // 10
    with receiving() as receiver:
        async with env.pool.acquire() as conn:
            await store.create_webhook(
                conn,
                url=receiver.url,
                kinds=[EventKind.STATE_WRITTEN],
                states=["bench/drain/*"],
                secret=SECRET,
                form="json",
                created_by="bench",
            )
            started = time.perf_counter()
            await conn.execute(
                """INSERT INTO events (state_name, action, actor, serial, detail)
                   SELECT 'bench/drain/' || (i % $2), 'write', 'bench', i, '{}'
                   FROM generate_series(1, $1) AS i""",
                count,
                states,
            )
        got = await asyncio.to_thread(receiver.wait_for, lambda got: len(got) >= count, 120.0)
        elapsed = time.perf_counter() - started
    async with env.pool.acquire() as conn:
        delivered = await conn.fetchval(
            "SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered'"
        )
        await conn.execute("DELETE FROM webhooks")
    if len({r.delivery for r in got}) != count or delivered != count:
        raise BenchError(f"webhook drain: {len(got)} received, {delivered} recorded")
    return Result(
        "webhooks, drain",
        f"{count:,} queued deliveries ({states} states) to a receiver on loopback",
        "none (an absolute goal)",
        elapsed,
        None,
        "<= 10 s",
        elapsed <= 10.0,
        1,
        {"per_second": round(count / elapsed)},
    )


WEBHOOK_GROUP = (queue_case, drain_case)
