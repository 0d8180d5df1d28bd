"""The append-only audit trail.

Events of API tokens (made, revoked, expired: app/tokens.py) are no state's: their state
name is TOKEN_EVENTS (empty, which no state is called), and only a caller that may
manage tokens (`tokens=True`: an admin) reads them. A `consumer-stale` event is read
only by a caller that may read its producer too.
"""

from contextvars import ContextVar
from typing import Any
from uuid import UUID

import asyncpg

from app.access import Principal, Role
from app.db import Row
from app.paging import ALL, Keyset, Page, paged_sql, pages_by_owner

TOKEN_EVENTS = ""  # the state name of a token's events
STALE = "consumer-stale"  # app/graph/links.py: its detail names the producer


def may_read_event(principal: Principal, row: Row) -> bool:
    """Whether `principal` reads event `row` (list_events' filter, in Python): one of a
    state it may read, and, for a `consumer-stale`, whose producer it may read too (a
    hidden producer is a missing one, which makes no such event); a token event only
    when it manages tokens."""
    state_name: str = row["state_name"]
    if state_name == TOKEN_EVENTS:
        return principal.has(Role.ADMIN)
    if row.get("action") == STALE and not principal.may_read(str(row["detail"]["producer"])):
        return False
    return principal.may_read(state_name)


def readable_sql(patterns: str, tokens: str) -> str:
    """SQL: event `e` may be read (may_read_event); `patterns` and `tokens` are SQL
    expressions, the caller's patterns (text[]) and whether it reads token events."""
    return f"""(may_read(e.state_name, {patterns}) AND (e.state_name <> '' OR {tokens})
        AND (e.action <> '{STALE}' OR may_read(e.detail->>'producer', {patterns})))"""


# An OIDC caller's verified claims (issuer, subject, repository, ref, workflow, run),
# set by app.auth for the request: every event it causes records them as detail.oidc.
CALLER_CLAIMS: ContextVar[dict[str, str] | None] = ContextVar("caller_claims", default=None)


async def append_event(
    conn: asyncpg.Connection,
    *,
    state_name: str,
    action: str,
    actor: str,
    state_id: UUID | None = None,
    serial: int | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    await conn.execute(
        """INSERT INTO events (state_id, state_name, action, actor, serial, detail)
           VALUES ($1, $2, $3, $4, $5, $6)""",
        state_id,
        state_name,
        action,
        actor,
        serial,
        {**(detail or {}), "oidc": claims} if (claims := CALLER_CLAIMS.get()) else detail or {},
    )


EVENT_COLUMNS = """e.id, e.state_name, e.action, e.actor, e.serial, e.detail, e.created_at,
    (extract(epoch FROM e.created_at) * 1000000)::bigint AS created_us"""
# Newest first; the key is (microseconds since the epoch, id).
EVENT_KEY = Keyset(("created_us", "id"), (int, UUID))


async def list_events(
    conn: asyncpg.Connection,
    state_names: list[str] | None,
    *,
    first: int,
    after: tuple[int, UUID] | None = None,
    count: bool = True,
    readable: list[str] | None = None,
    tokens: bool = False,
) -> dict[Any, Page[asyncpg.Record]]:
    """Events newest first: per state name (events outlive their state), or all (owner
    ALL: the newest by one index range, migration 0017; `count=False` leaves the
    total uncounted, None, a pass over every event saved); of the states `readable`
    lets a caller see (app.access), token events only with `tokens`."""
    owner, where, single = (
        ("e.state_name", "e.state_name = ANY($1::text[])", None)
        if state_names
        else (str(ALL), "$1::text[] IS NULL", str(ALL))
    )
    sql = paged_sql(
        f"""SELECT {owner} AS owner, e.id, e.created_at FROM events e
            WHERE {where} AND {readable_sql("$5::text[]", "$6::boolean")}""",
        order="created_at DESC, id DESC",
        after="""($2::bigint IS NULL OR (created_at, id) <
                  ('epoch'::timestamptz + $2 * interval '1 microsecond', $3::uuid))""",
        limit="$4",
        select=EVENT_COLUMNS,
        joins="LEFT JOIN events e ON e.id = p.id",
        owner=single,
        count=count,
    )
    after_us, after_id = after or (None, None)
    records = await conn.fetch(sql, state_names, after_us, after_id, first + 1, readable, tokens)
    return pages_by_owner(records, first, EVENT_KEY)


async def events_by_ids(conn: asyncpg.Connection, ids: list[UUID]) -> dict[UUID, asyncpg.Record]:
    records = await conn.fetch(f"SELECT {EVENT_COLUMNS} FROM events e WHERE e.id = ANY($1)", ids)
    return {r["id"]: r for r in records}
