"""State locking as Terraform users meet it: a second apply refused while the first
holds the lock, `-lock-timeout` waiting its turn, `force-unlock` of a stale lock.

The `hold` configuration keeps its apply (and so the lock) running until the
test creates a gate file: no test depends on how long anything takes.
"""

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from app import db
from tests.helpers.backend import events
from tests.helpers.live_server import LiveServer
from tests.helpers.terraform import ADMIN, Backend, Terraform, gate, kill
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.slow  # runs real Terraform

T = TypeVar("T")
STATE = "team/locking"
LOCK_ERROR = "Error acquiring the state lock"


@pytest.fixture(scope="module")
async def hold(new_project, backend: Backend) -> Terraform:
    terraform = new_project("hold", backend.block(STATE))
    (await terraform.run("init")).check()
    return terraform


def apply_args(gate_path, *extra: str) -> tuple[str, ...]:
    return ("-auto-approve", f"-var=gate={gate_path}", *extra)


async def _until(check: Callable[[], Awaitable[T | None]], what: str) -> T:
    return await wait_until(check, what, within=120, interval=0.1)


async def _lock_taken_by(pool: db.Pool, process: asyncio.subprocess.Process) -> str:
    """The ID of the lock `process` (an apply in the background) has taken."""

    async def held() -> str | None:
        assert process.returncode is None, "the apply ended before taking the lock"
        async with pool.acquire() as conn:
            return await conn.fetchval(
                """SELECT l.lock_id FROM state_locks l JOIN states s ON s.id = l.state_id
                   WHERE s.name = $1""",
                STATE,
            )

    return await _until(held, "the apply to take the lock")


def _refusals(server: LiveServer) -> int:
    return server.log().count(f'"LOCK /states/{STATE}/lock HTTP/1.1" 409')


async def test_a_held_lock_refuses_an_apply_and_a_lock_timeout_waits_for_it(
    hold, server, pool, tmp_path, running
) -> None:
    first_gate, open_gate = gate(tmp_path, "first"), gate(tmp_path, "open", open_=True)
    first = await hold.start("apply", *apply_args(first_gate))
    running.append(first)
    first_id = await _lock_taken_by(pool, first)

    second = await hold.run("apply", *apply_args(open_gate))
    assert second.returncode == 1
    assert LOCK_ERROR in second.stderr and first_id in second.stderr

    refused = _refusals(server)
    third = await hold.start("apply", *apply_args(open_gate, "-lock-timeout=300s"))
    running.append(third)

    async def third_refused() -> bool:
        return _refusals(server) > refused

    await _until(third_refused, "the third apply to be refused")
    first_gate.touch()  # the first apply ends and unlocks; the third then gets the lock
    (await hold.finish(first, "apply")).check()
    (await hold.finish(third, "apply")).check()

    async with pool.acquire() as conn:
        log = [
            (e["action"], e["detail"].get("id") or e["detail"].get("lock"))
            for e in await events(conn, STATE)
        ][-6:]
    third_id = log[3][1]
    assert third_id != first_id
    assert log == [
        ("lock", first_id),
        ("write", first_id),
        ("unlock", first_id),
        ("lock", third_id),
        ("write", third_id),
        ("unlock", third_id),
    ]


async def test_force_unlock_releases_a_stale_lock(
    hold, new_project, admin_backend, pool, tmp_path, running
) -> None:
    crashed = await hold.start("apply", *apply_args(gate(tmp_path, "never")))
    running.append(crashed)
    stale_id = await _lock_taken_by(pool, crashed)
    kill(crashed)  # the lock outlives its Terraform
    await crashed.communicate()

    open_gate = gate(tmp_path, "open", open_=True)
    refused = await hold.run("apply", *apply_args(open_gate))
    assert refused.returncode == 1 and stale_id in refused.stderr

    # another holder's lock is the admin's to break: the write token is refused
    refused = await hold.run("force-unlock", "-force", stale_id)
    assert refused.returncode == 1 and "Failed to unlock state" in refused.stderr
    admin = new_project("hold", admin_backend.block(STATE))
    (await admin.run("init")).check()
    unlocked = (await admin.run("force-unlock", "-force", stale_id)).check()
    assert "successfully unlocked" in unlocked.stdout
    async with pool.acquire() as conn:
        force = (await events(conn, STATE))[-1]
    assert (force["action"], force["actor"], force["detail"]["id"]) == (
        "force-unlock",
        ADMIN,
        stale_id,
    )
    (await hold.run("apply", *apply_args(open_gate))).check()
