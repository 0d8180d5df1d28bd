"""Reads that name one state: a statement whose every graph table is given the state's id
(a parameter, not a join) runs on that state's shard alone on a Citus cluster (a router
plan, with any SQL: recursive walks, LATERAL, windows).

On Citus, the reads keyed by versions (a resource is read at a version: ResourceKey)
group their keys by state and send a statement per state, each naming its state; on a
single node one statement reads them all, each table joined to its key's state as
before (`pin`: the state's parameter or that join's column), so a query costs as many
statements however many states its items span. A version's state never changes, so the
versions' states are remembered once known (from the rows a read returns, or asked for):
the first read of a version given by a client (a global id) asks, the rest do not.
"""

from collections.abc import Awaitable, Callable, Hashable, Iterable, Sequence
from typing import TypeVar
from uuid import UUID

import asyncpg

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def sharded(conn: asyncpg.Connection) -> bool:
    """Whether `conn`'s database is a Citus cluster's (a pool's connection knows: app.db)."""
    return bool(getattr(conn, "sharded", False))


def pin(state: UUID | None, parameter: str, column: str) -> str:
    """SQL for a row's state: the parameter naming it (`state` given: on Citus), else
    the column it joins (a single node)."""
    return parameter if state is not None else column


def pinned(state: UUID | None) -> list[UUID]:
    """The statement's last argument: the state, where it names one."""
    return [state] if state is not None else []


# version id -> state id; at most _KEPT (a version's entry is 32 bytes of ids)
_STATES: dict[UUID, UUID] = {}
_KEPT = 200_000


def remember(pairs: Iterable[tuple[UUID, UUID]]) -> None:
    """Versions' states (version id, state id), as read."""
    for version_id, state_id in pairs:
        if version_id not in _STATES:
            if len(_STATES) >= _KEPT:
                del _STATES[next(iter(_STATES))]  # the oldest first
            _STATES[version_id] = state_id


def remember_rows(records: Iterable[asyncpg.Record]) -> None:
    """The states of the versions of rows with `version_id` and `state_id` columns."""
    remember(
        (r["version_id"], r["state_id"])
        for r in records
        if r["version_id"] is not None and r["state_id"] is not None
    )


async def states_of(conn: asyncpg.Connection, version_ids: Iterable[UUID]) -> dict[UUID, UUID]:
    """The state of each version that exists (those not remembered asked for: every
    shard, one index probe each)."""
    wanted = set(version_ids)
    missing = [v for v in wanted if v not in _STATES]
    if missing:
        records = await conn.fetch(
            "SELECT id, state_id FROM state_versions WHERE id = ANY($1::uuid[])", missing
        )
        remember((r["id"], r["state_id"]) for r in records)
    return {v: _STATES[v] for v in wanted if v in _STATES}


async def by_state(
    conn: asyncpg.Connection, keys: Sequence[K], version_of: Callable[[K], UUID]
) -> dict[UUID, list[K]]:
    """`keys` grouped by the state of their version (`version_of`), in their order; keys
    of versions that do not exist are left out."""
    states = await states_of(conn, (version_of(k) for k in keys))
    grouped: dict[UUID, list[K]] = {}
    for key in keys:
        state_id = states.get(version_of(key))
        if state_id is not None:
            grouped.setdefault(state_id, []).append(key)
    return grouped


async def per_state(
    conn: asyncpg.Connection,
    keys: Sequence[K],
    version_of: Callable[[K], UUID],
    read: Callable[[list[K], UUID | None], Awaitable[dict[K, V]]],
) -> dict[K, V]:
    """On Citus, `read(keys of one state, its id)` for each state of `keys`, merged; on
    a single node, `read(keys, None)`: one statement for all (the statement then joins
    each key's state instead of naming it)."""
    if not sharded(conn):
        return await read(list(keys), None)
    found: dict[K, V] = {}
    for state_id, of_state in (await by_state(conn, keys, version_of)).items():
        found.update(await read(of_state, state_id))
    return found
