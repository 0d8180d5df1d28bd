"""The webhook tables directly: secrets re-sealed by rotate-key, what the trigger queues
(matching kinds and state globs only, and in the event's transaction), the actions of
webhooks derived again at start-up."""

import os

import asyncpg
import pytest

from app import crypto
from app.graph.events import append_event
from app.webhooks import store
from app.webhooks.kinds import EventKind

SECRET = "sixteen-chars-or-more"


@pytest.fixture
def conn(own_conn: asyncpg.Connection) -> asyncpg.Connection:
    """The module's own database: no in-process app's worker delivers from it."""
    return own_conn


async def _make(conn: asyncpg.Connection, kinds: list[EventKind], states: list[str] | None):
    return await store.create_webhook(
        conn,
        url="https://192.0.2.1/",
        kinds=kinds,
        states=states,
        secret=SECRET,
        form="json",
        created_by="test",
    )


async def test_rotate_key_reseals_secrets(conn: asyncpg.Connection) -> None:
    with crypto.using(crypto.Keyring()):
        made = await _make(conn, [EventKind.STATE_WRITTEN], None)
        clear = await conn.fetchval("SELECT secret FROM webhooks")
        assert clear == SECRET.encode()
    key = os.urandom(32)
    with crypto.using(crypto.Keyring(key)):
        assert await store.reseal_secrets(conn) == 1
        assert await store.reseal_secrets(conn) == 0
        sealed = await conn.fetchval("SELECT secret FROM webhooks")
        assert sealed[:1] == crypto.SEALED and SECRET.encode() not in sealed
        assert store.open_secret(made["id"], sealed) == SECRET.encode()
    with crypto.using(crypto.Keyring(os.urandom(32), key)):  # a rotation: old key opens
        assert await store.reseal_secrets(conn) == 1
    with crypto.using(crypto.Keyring()), pytest.raises(crypto.UnknownKey):
        store.open_secret(made["id"], await conn.fetchval("SELECT secret FROM webhooks"))


async def _queued(conn: asyncpg.Connection) -> list[tuple[str, str]]:
    rows = await conn.fetch(
        """SELECT w.url, d.state_name FROM webhook_deliveries d JOIN webhooks w
           ON w.id = d.webhook_id ORDER BY d.seq"""
    )
    return [(r["url"], r["state_name"]) for r in rows]


async def test_the_trigger_queues_matching_events_in_their_transaction(
    conn: asyncpg.Connection,
) -> None:
    team = await _make(conn, [EventKind.STATE_WRITTEN], ["team/*"])
    await conn.execute("UPDATE webhooks SET url = 'team' WHERE id = $1", team["id"])
    stale = await _make(conn, [EventKind.CONSUMER_STALE, EventKind.LOCK_FORCE_RELEASED], None)
    await conn.execute("UPDATE webhooks SET url = 'stale' WHERE id = $1", stale["id"])
    for name, action in (
        ("team/a", "write"),
        ("other/a", "write"),
        ("team/a", "export"),
        ("team/a", "force-unlock"),
        ("other/b", "consumer-stale"),
        ("team/b", "apply"),
    ):
        await append_event(conn, state_name=name, action=action, actor="t")
    with pytest.raises(RuntimeError):
        async with conn.transaction():
            await append_event(conn, state_name="team/rolled-back", action="write", actor="t")
            raise RuntimeError
    assert await _queued(conn) == [
        ("team", "team/a"),
        ("stale", "team/a"),
        ("stale", "other/b"),
        ("team", "team/b"),
    ]


async def test_actions_are_derived_again_at_start_up(conn: asyncpg.Connection) -> None:
    made = await _make(conn, [EventKind.STATE_WRITTEN, EventKind.POLICY_VIOLATED], None)
    await conn.execute("UPDATE webhooks SET actions = '{write}'")  # as an older release made it
    await store.sync_actions(conn)
    actions = await conn.fetchval("SELECT actions FROM webhooks WHERE id = $1", made["id"])
    assert actions == ["apply", "policy-violated", "release", "write"]
