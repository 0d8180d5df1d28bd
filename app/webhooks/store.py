"""The webhooks and their outbox of deliveries (tables of migration 0024): what the API
changes and lists, and what the worker claims and records.

A webhook's secret is sealed with the process keyring (app/crypto.py), its id the
context, and only ever opened by the worker to sign; no read here returns it.
"""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from app import crypto
from app.db import Row
from app.errors import BadInput, NotFound
from app.paging import Keyset, Page, paged_sql, pages_by_owner
from app.webhooks.kinds import ACTIONS, FAILING_ACTION, LOCK_HELD_ACTION, EventKind, actions_of
from app.webhooks.payload import FORMATS

MIN_SECRET_CHARS = 16
CHANNEL = "infragraph_webhooks"  # notified when deliveries are queued (migration 0024)
ACTOR = "infragraph"  # who the events the worker inserts are by

_COLUMNS = "id, url, events, states, format, failing, created_by, created_at, updated_at"


def _context(webhook_id: UUID) -> bytes:
    return b"webhook secret " + webhook_id.bytes


def open_secret(webhook_id: UUID, stored: bytes) -> bytes:
    return crypto.keyring().open(stored, _context(webhook_id))


def _checked(
    kinds: Sequence[EventKind] | None,
    states: Sequence[str] | None,
    secret: str | None,
    form: str | None,
) -> None:
    if kinds is not None and not kinds:
        raise BadInput("a webhook subscribes to at least one event kind")
    if states is not None and any(not glob for glob in states):
        raise BadInput("a state glob is empty")
    if secret is not None and len(secret) < MIN_SECRET_CHARS:
        raise BadInput(f"a webhook secret has at least {MIN_SECRET_CHARS} characters")
    if form is not None and form not in FORMATS:
        raise BadInput(f"a webhook's format is one of {', '.join(FORMATS)}")


async def create_webhook(
    conn: asyncpg.Connection,
    *,
    url: str,
    kinds: Sequence[EventKind],
    states: Sequence[str] | None,
    secret: str,
    form: str,
    created_by: str,
) -> Row:
    """A new webhook (its URL checked by the caller: app.webhooks.destination)."""
    _checked(kinds, states, secret, form)
    webhook_id = uuid.uuid4()
    row = await conn.fetchrow(
        f"""INSERT INTO webhooks (id, url, events, actions, states, secret, format, created_by)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING {_COLUMNS}""",
        webhook_id,
        url,
        [k.value for k in kinds],
        actions_of(kinds),
        list(states) if states else None,
        crypto.keyring().seal(secret.encode(), _context(webhook_id)),
        form,
        created_by,
    )
    assert row is not None
    return row


async def update_webhook(
    conn: asyncpg.Connection,
    webhook_id: UUID,
    *,
    url: str | None = None,
    kinds: Sequence[EventKind] | None = None,
    states: Sequence[str] | None = None,
    secret: str | None = None,
    form: str | None = None,
) -> Row:
    """Change what is given (None: unchanged; `states` [] : every state again)."""
    _checked(kinds, None if states is None else states, secret, form)
    row = await conn.fetchrow(
        f"""UPDATE webhooks SET
                url = coalesce($2, url),
                events = coalesce($3, events),
                actions = coalesce($4, actions),
                states = CASE WHEN $5::boolean THEN $6::text[] ELSE states END,
                secret = coalesce($7, secret),
                format = coalesce($8, format),
                updated_at = now()
            WHERE id = $1 RETURNING {_COLUMNS}""",
        webhook_id,
        url,
        [k.value for k in kinds] if kinds is not None else None,
        actions_of(kinds) if kinds is not None else None,
        states is not None,
        list(states) if states else None,
        crypto.keyring().seal(secret.encode(), _context(webhook_id)) if secret else None,
        form,
    )
    if row is None:
        raise NotFound(f"no webhook {webhook_id}")
    return row


async def delete_webhook(conn: asyncpg.Connection, webhook_id: UUID) -> Row:
    """Delete a webhook and its deliveries (sent or not); returns it as it was."""
    row = await conn.fetchrow(
        f"DELETE FROM webhooks WHERE id = $1 RETURNING {_COLUMNS}", webhook_id
    )
    if row is None:
        raise NotFound(f"no webhook {webhook_id}")
    return row


async def list_webhooks(conn: asyncpg.Connection) -> list[asyncpg.Record]:
    return await conn.fetch(f"SELECT {_COLUMNS} FROM webhooks ORDER BY created_at, id")


async def any_webhook(conn: asyncpg.Connection, action: str | None = None) -> bool:
    """Whether a webhook exists (that subscribes to `action`)."""
    found: bool = await conn.fetchval(
        "SELECT EXISTS (SELECT FROM webhooks WHERE $1::text IS NULL OR $1 = ANY (actions))",
        action,
    )
    return found


async def sync_actions(conn: asyncpg.Connection) -> None:
    """Every webhook's actions derived again from its kinds (kinds.ACTIONS): at start-up,
    so what this release maps a kind to holds for webhooks made by an older one."""
    pairs = [(kind.value, action) for kind, actions in ACTIONS.items() for action in actions]
    await conn.execute(
        """WITH m AS (SELECT * FROM unnest($1::text[], $2::text[]) AS m (kind, action)),
                derived AS (
                    SELECT w.id, coalesce(array_agg(DISTINCT m.action ORDER BY m.action)
                                          FILTER (WHERE m.action IS NOT NULL), '{}') AS actions
                    FROM webhooks w LEFT JOIN m ON m.kind = ANY (w.events) GROUP BY w.id)
           UPDATE webhooks w SET actions = d.actions
           FROM derived d WHERE d.id = w.id AND w.actions IS DISTINCT FROM d.actions""",
        [k for k, _ in pairs],
        [a for _, a in pairs],
    )


# --- deliveries, as listed ---------------------------------------------------------------

DELIVERY_KEY = Keyset(("seq",), (int,))
_DELIVERY_COLUMNS = """d.id, d.seq, d.webhook_id, d.event_id, d.state_name, d.status,
    d.attempts, d.next_attempt_at, d.last_attempt_at, d.last_status, d.last_error,
    d.created_at, d.delivered_at, e.action"""


async def list_deliveries(
    conn: asyncpg.Connection,
    webhook_ids: list[UUID],
    *,
    first: int,
    after: tuple[int] | None = None,
) -> dict[Any, Page[asyncpg.Record]]:
    """Each webhook's deliveries, newest first, by webhook id."""
    sql = paged_sql(
        """SELECT d.webhook_id AS owner, d.seq, d.id FROM webhook_deliveries d
           WHERE d.webhook_id = ANY ($1::uuid[])""",
        order="seq DESC",
        after="($2::bigint IS NULL OR seq < $2)",
        limit="$3",
        select=_DELIVERY_COLUMNS,
        joins="""LEFT JOIN webhook_deliveries d ON d.id = p.id
                 LEFT JOIN events e ON e.id = d.event_id""",
    )
    records = await conn.fetch(sql, webhook_ids, after[0] if after else None, first + 1)
    return pages_by_owner(records, first, DELIVERY_KEY)


async def redeliver(conn: asyncpg.Connection, delivery_id: UUID) -> asyncpg.Record:
    """Queue a delivery's event again for its webhook, as a new delivery (its own id,
    after the webhook's other deliveries of that state)."""
    row = await conn.fetchrow(
        f"""WITH again AS (
                INSERT INTO webhook_deliveries (webhook_id, event_id, state_name)
                SELECT webhook_id, event_id, state_name FROM webhook_deliveries WHERE id = $1
                RETURNING *)
            SELECT {_DELIVERY_COLUMNS} FROM again d LEFT JOIN events e ON e.id = d.event_id""",
        delivery_id,
    )
    if row is None:
        raise NotFound(f"no webhook delivery {delivery_id}")
    await conn.execute(f"SELECT pg_notify('{CHANNEL}', '')")
    return row


# --- the worker's side -------------------------------------------------------------------

# The oldest due delivery of each (webhook, state) whose older ones are all sent or dead,
# claimed for `$2` seconds (the lease); rows another process holds are skipped.
_CLAIM = """
WITH due AS (
    SELECT d.id FROM webhook_deliveries d
    WHERE d.status = 'pending' AND d.next_attempt_at <= now()
      -- a probe of the index per row (a correlated subquery, never planned as a join)
      AND d.seq = (
          SELECT min(o.seq) FROM webhook_deliveries o
          WHERE o.status = 'pending' AND o.webhook_id = d.webhook_id
            AND o.state_name = d.state_name)
    ORDER BY d.next_attempt_at, d.seq
    LIMIT $1
    FOR UPDATE SKIP LOCKED),
claimed AS (
    UPDATE webhook_deliveries d
    SET attempts = d.attempts + 1, last_attempt_at = now(),
        next_attempt_at = now() + make_interval(secs => $2)
    FROM due WHERE d.id = due.id
    RETURNING d.*)
SELECT c.id, c.seq, c.webhook_id, c.attempts, w.url, w.secret, w.format,
       e.id AS event_id, e.state_name, e.action, e.actor, e.serial, e.detail, e.created_at
FROM claimed c JOIN webhooks w ON w.id = c.webhook_id JOIN events e ON e.id = c.event_id
ORDER BY c.seq"""


async def claim(conn: asyncpg.Connection, limit: int, lease_s: float) -> list[asyncpg.Record]:
    return await conn.fetch(_CLAIM, limit, lease_s)


async def record_delivered(conn: asyncpg.Connection, ids: list[UUID], statuses: list[int]) -> None:
    """Deliveries the receiver took (2xx); their webhooks are no longer failing."""
    await conn.execute(
        """WITH done AS (
               UPDATE webhook_deliveries d
               SET status = 'delivered', delivered_at = now(), last_status = r.status,
                   last_error = NULL
               FROM unnest($1::uuid[], $2::int[]) AS r (id, status)
               WHERE d.id = r.id AND d.status = 'pending'
               RETURNING d.webhook_id)
           UPDATE webhooks SET failing = false
           WHERE failing AND id IN (SELECT webhook_id FROM done)""",
        ids,
        statuses,
    )


@dataclass(frozen=True)
class Failure:
    delivery_id: UUID
    status: int | None  # the receiver's HTTP status; None: no answer
    error: str
    retry_in_s: float


async def record_failed(conn: asyncpg.Connection, failure: Failure, retry_for_s: float) -> str:
    """A failed attempt: retried in `retry_in_s`, or dead when that is past `retry_for_s`
    since it was queued; then its webhook is failing, and the first time a
    `webhook-failing` event says so. Returns the delivery's status."""
    async with conn.transaction():
        row = await conn.fetchrow(
            """UPDATE webhook_deliveries
               SET last_status = $2, last_error = $3,
                   next_attempt_at = now() + make_interval(secs => $4),
                   status = CASE WHEN now() + make_interval(secs => $4)
                                      > created_at + make_interval(secs => $5)
                                 THEN 'dead' ELSE 'pending' END
               WHERE id = $1 AND status = 'pending'
               RETURNING status, webhook_id, event_id, state_name, attempts""",
            failure.delivery_id,
            failure.status,
            failure.error[:1000],
            failure.retry_in_s,
            retry_for_s,
        )
        if row is None or row["status"] != "dead":
            return row["status"] if row is not None else "gone"
        await conn.execute(
            """WITH failing AS (
                   UPDATE webhooks SET failing = true WHERE id = $1 AND NOT failing
                   RETURNING id, url)
               INSERT INTO events (state_name, action, actor, detail)
               SELECT $2, $3, $4, jsonb_build_object(
                   'webhook', f.id, 'url', f.url, 'delivery', $5::uuid, 'event', $6::uuid,
                   'attempts', $7::int, 'status', $8::int, 'error', $9::text)
               FROM failing f""",
            row["webhook_id"],
            row["state_name"],
            FAILING_ACTION,
            ACTOR,
            failure.delivery_id,
            row["event_id"],
            row["attempts"],
            failure.status,
            failure.error[:1000],
        )
        return "dead"


async def record_held_locks(conn: asyncpg.Connection, held_s: float) -> int:
    """A `lock-held` event for each lock held longer than `held_s` seconds that has none
    yet, while any webhook subscribes to them; how many. Processes take turns."""
    if not await any_webhook(conn, LOCK_HELD_ACTION):
        return 0
    async with conn.transaction():
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('infragraph:lock-held', 0))"
        )
        found: int = await conn.fetchval(
            """WITH held AS (
                   INSERT INTO events (state_id, state_name, action, actor, detail)
                   SELECT l.state_id, s.name, $2, $3, jsonb_build_object(
                       'id', l.lock_id, 'who', l.info -> 'Who',
                       'operation', l.info -> 'Operation', 'since', l.created_at,
                       'minutes', floor(extract(epoch FROM now() - l.created_at) / 60))
                   FROM state_locks l JOIN states s ON s.id = l.state_id
                   WHERE l.created_at <= now() - make_interval(secs => $1)
                     AND NOT EXISTS (
                         SELECT FROM events e
                         WHERE e.state_id = l.state_id AND e.created_at >= l.created_at
                           AND e.action = $2 AND e.detail ->> 'id' = l.lock_id)
                   RETURNING 1)
               SELECT count(*) FROM held""",
            held_s,
            LOCK_HELD_ACTION,
            ACTOR,
        )
        return found


async def reseal_secrets(conn: asyncpg.Connection) -> int:
    """Every webhook secret sealed again under the keyring's current key (rotate-key);
    how many."""
    ring = crypto.keyring()
    count = 0
    async with conn.transaction():
        for row in await conn.fetch("SELECT id, secret FROM webhooks FOR UPDATE"):
            context = _context(row["id"])
            plain = ring.open(row["secret"], context)
            prefix = ring.prefix
            if (prefix is None and row["secret"] == plain) or (
                prefix is not None and bytes(row["secret"]).startswith(prefix)
            ):
                continue
            await conn.execute(
                "UPDATE webhooks SET secret = $2 WHERE id = $1",
                row["id"],
                ring.seal(plain, context),
            )
            count += 1
    return count
