"""A lock belongs to the token that took it, through the real server: the lock matrix of
docs/security.md ("Roles and Terraform"), one case per cell, and a plan token's lock.

The state is written, then locked for an apply by `team-a` (write, team/*). Each
other caller is a token on the same states: `team-b` (write), `team-pr` (plan),
`team-dash` (read), and `ci` (admin). Knowing the lock's ID grants nothing.
"""

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from app.tokens import token_hash
from tests.helpers.backend import TOKENS, events, http_client, lock_info, tf_state, versions
from tests.helpers.live_server import LiveServer

NAME = "team/locked"
URL = f"/states/{NAME}"
HOLDER = "team-a"
DB_TOKENS = {  # name: (role, secret)
    HOLDER: ("write", "a-secret"),
    "team-b": ("write", "b-secret"),
    "team-pr": ("plan", "pr-secret"),
    "team-dash": ("read", "dash-secret"),
}
CALLERS = {"holder": HOLDER, "other writer": "team-b", "plan": "team-pr", "read": "team-dash"}
CALLERS["admin"] = "ci"  # a bootstrap token of the server (tests/backend/conftest.py)
HELD = lock_info("apply-lock-1", who="alice@ci")
PLAN_INFO = {**lock_info("apply-lock-1", who="pr@ci"), "Operation": "OperationTypePlan"}


@dataclass(frozen=True)
class Op:
    method: str
    params: dict[str, str]
    body: bytes


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


# The rows of the matrix: what each operation sends
OPERATIONS: dict[str, Op] = {
    "UNLOCK with the lock's ID": Op("UNLOCK", {}, _json(HELD)),
    "UNLOCK with the lock's ID, as a plan's LockInfo": Op("UNLOCK", {}, _json(PLAN_INFO)),
    "UNLOCK, empty (terraform force-unlock)": Op("UNLOCK", {}, b""),
    "POST ?ID= the lock's ID": Op("POST", {"ID": HELD["ID"]}, tf_state(2)),
    "POST without an ID": Op("POST", {}, tf_state(2)),
    "DELETE ?ID= the lock's ID": Op("DELETE", {"ID": HELD["ID"]}, b""),
    "DELETE without an ID": Op("DELETE", {}, b""),
    "LOCK with the lock's ID": Op("LOCK", {}, _json(HELD)),
    "LOCK for a plan, another ID": Op("LOCK", {}, _json({**PLAN_INFO, "ID": "plan-2"})),
}
# What each caller gets: docs/security.md shows this very table
LOCK_MATRIX: dict[str, tuple[str, ...]] = {
    # operation: (holder, other writer, plan, read, admin)
    "UNLOCK with the lock's ID": ("200 unlock", "403 holder", "403", "403", "200 force-unlock"),
    "UNLOCK with the lock's ID, as a plan's LockInfo": (
        "200 unlock",
        "403 holder",
        "403 holder",
        "403",
        "200 force-unlock",
    ),
    "UNLOCK, empty (terraform force-unlock)": ("403", "403", "403", "403", "200 force-unlock"),
    "POST ?ID= the lock's ID": ("200 written", "403 holder", "403", "403", "403 holder"),
    "POST without an ID": ("409", "409", "403", "403", "409"),
    "DELETE ?ID= the lock's ID": ("200 deleted", "403 holder", "403", "403", "403 holder"),
    "DELETE without an ID": ("409", "409", "403", "403", "409"),
    "LOCK with the lock's ID": ("200 retry", "409", "403", "403", "409"),
    "LOCK for a plan, another ID": (
        "200 shared",
        "200 shared",
        "200 shared",
        "403",
        "200 shared",
    ),
}
OUTCOMES = {
    "200 unlock": "released, recorded as an unlock by the caller",
    "200 force-unlock": "released, recorded as a force-unlock by the caller",
    "200 written": "the version is written under the lock, which stays held",
    "200 deleted": "the state, its history and its lock are gone",
    "200 retry": "a LOCK retried: the lock stays the holder's",
    "200 shared": "a plan's lock taken beside the writer's, which stays held",
    "403 holder": "refused; the body names the holder (token, lock ID, Who, Operation)",
    "403": "refused by the caller's role (the body says which role it needs)",
    "409": "locked: the body is the holder's LockInfo, as Terraform expects",
}


def markdown_table() -> str:
    """The matrix as docs/security.md shows it."""
    lines = [
        f"| operation on a state locked by a write token | {' | '.join(CALLERS)} |",
        "| --- |" + " --- |" * len(CALLERS),
    ]
    lines += [f"| {op} | {' | '.join(cells)} |" for op, cells in LOCK_MATRIX.items()]
    lines += ["", "| outcome | meaning |", "| --- | --- |"]
    lines += [f"| {outcome} | {meaning} |" for outcome, meaning in OUTCOMES.items()]
    return "\n".join(lines)


def test_the_docs_show_this_matrix() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()
    assert markdown_table() in docs


async def _insert_tokens(conn: asyncpg.Connection) -> None:
    for name, (role, secret) in DB_TOKENS.items():
        await conn.execute(
            """INSERT INTO api_tokens (name, token_hash, role, state_globs, created_by)
               VALUES ($1, $2, $3, '{team/*}', 'tests')""",
            name,
            token_hash(secret),
            role,
        )


def _secret(name: str) -> str:
    return DB_TOKENS[name][1] if name in DB_TOKENS else TOKENS[name]


@pytest.fixture
async def clients(
    server: LiveServer, conn: asyncpg.Connection
) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    """A client per caller, tokens in an emptied database (gone after: the server's
    neighbours in this package run open)."""
    await _insert_tokens(conn)
    made = {role: http_client(server, (name, _secret(name))) for role, name in CALLERS.items()}
    try:
        yield made
    finally:
        for client in made.values():
            await client.aclose()
        await conn.execute("DELETE FROM api_tokens")


async def _held(conn: asyncpg.Connection) -> tuple[str, str] | None:
    row = await conn.fetchrow(
        """SELECT l.lock_id, l.holder FROM state_locks l JOIN states s ON s.id = l.state_id
           WHERE s.name = $1""",
        NAME,
    )
    return None if row is None else (row["lock_id"], row["holder"])


def _check(outcome: str, caller: str) -> Callable[..., Any]:
    """What `outcome` means for the response and the database, as a coroutine."""

    async def check(response: httpx.Response, conn: asyncpg.Connection) -> None:
        status = int(outcome.split()[0])
        assert response.status_code == status, response.text
        body = response.json()
        still_held = (HELD["ID"], HOLDER)
        last = (await events(conn, NAME))[-1]
        match outcome:
            case "200 unlock" | "200 force-unlock":
                assert body["unlocked"] is True and await _held(conn) is None
                assert (last["action"], last["actor"]) == (outcome[4:], CALLERS[caller])
                assert last["detail"]["holder"] == HOLDER
            case "200 written":
                assert await versions(conn, NAME) == [1, 2] and await _held(conn) == still_held
            case "200 deleted":
                assert await conn.fetchval("SELECT count(*) FROM states") == 0
                assert await conn.fetchval("SELECT count(*) FROM state_locks") == 0
            case "200 retry":
                assert await _held(conn) == still_held
            case "200 shared":
                assert await _held(conn) == still_held
                shared = await conn.fetch("SELECT lock_id, holder FROM state_plan_locks")
                assert [(r["lock_id"], r["holder"]) for r in shared] == [
                    ("plan-2", CALLERS[caller])
                ]
                assert (last["action"], last["detail"]["shared"]) == ("lock", True)
            case "403 holder":
                assert body["code"] == "FORBIDDEN" and body["detail"]["holder"] == HOLDER
                assert f"held by token '{HOLDER}'" in body["error"]
                assert body["detail"]["lock_id"] == HELD["ID"]
            case "403":
                assert body["code"] == "FORBIDDEN" and "holder" not in body["detail"]
            case "409":
                assert body["code"] == "LOCKED" and body["ID"] == HELD["ID"]
        if not outcome.startswith("200"):
            assert await _held(conn) == still_held and await versions(conn, NAME) == [1]

    return check


CELLS = [(operation, caller) for operation in LOCK_MATRIX for caller in CALLERS]


@pytest.mark.parametrize(("operation", "caller"), CELLS)
async def test_the_lock_matrix(clients, conn, operation: str, caller: str) -> None:
    holder = clients["holder"]
    assert (await holder.post(URL, content=tf_state(1))).is_success
    assert (await holder.request("LOCK", URL, content=_json(HELD))).is_success
    op = OPERATIONS[operation]
    response = await clients[caller].request(op.method, URL, params=op.params, content=op.body)
    outcome = LOCK_MATRIX[operation][list(CALLERS).index(caller)]
    await _check(outcome, caller)(response, conn)


async def test_a_plan_token_locks_for_a_plan_and_never_writes(clients, conn) -> None:
    pr, writer, admin = clients["plan"], clients["holder"], clients["admin"]
    assert (await writer.post(URL, content=tf_state(1))).is_success
    apply_lock = {**PLAN_INFO, "Operation": "OperationTypeApply", "ID": "pr-apply"}
    refused = await pr.request("LOCK", URL, content=_json(apply_lock))
    assert refused.status_code == 403 and "needs the write role" in refused.json()["error"]
    plan_lock = {**PLAN_INFO, "ID": "pr-plan"}
    assert (await pr.request("LOCK", URL, content=_json(plan_lock))).is_success
    # a plan's lock is shared: the writer's stays free, and no writer waits for the plan
    assert await _held(conn) is None
    shared = await conn.fetch("SELECT lock_id, holder FROM state_plan_locks")
    assert [(r["lock_id"], r["holder"]) for r in shared] == [("pr-plan", "team-pr")]
    # its own lock lets it write nothing
    assert (await pr.post(URL, params={"ID": "pr-plan"}, content=tf_state(2))).status_code == 403
    assert (await pr.delete(URL, params={"ID": "pr-plan"})).status_code == 403
    assert (await writer.post(URL, content=tf_state(2))).is_success
    assert (await pr.request("UNLOCK", URL, content=_json(plan_lock))).json()["unlocked"]
    # the admin breaks a plan lock as any other: a force-unlock
    assert (await pr.request("LOCK", URL, content=_json(plan_lock))).is_success
    assert (await admin.request("UNLOCK", URL, content=_json(plan_lock))).is_success
    assert [
        (e["action"], e["actor"], e["detail"].get("operation")) for e in await events(conn, NAME)
    ][1:] == [
        ("lock", "team-pr", "OperationTypePlan"),
        ("write", HOLDER, None),
        ("unlock", "team-pr", "OperationTypePlan"),
        ("lock", "team-pr", "OperationTypePlan"),
        ("force-unlock", "ci", "OperationTypePlan"),
    ]
    assert await versions(conn, NAME) == [1, 2]
    unlocked = [e["detail"] for e in await events(conn, NAME) if e["action"] == "unlock"]
    assert unlocked == [
        {
            "id": "pr-plan",
            "who": "pr@ci",
            "operation": "OperationTypePlan",
            "holder": "team-pr",
            "shared": True,
        }
    ]
