"""`rotate-key` brings what was stored before keyed digests and the catalog's secrets to
the form a write stores now: output and link digests keyed (links stay fresh across the
change), the catalog's secrets split out and sealed, IaC state's newly named secrets
hashed. And the keyed digest computed in SQL is the HMAC it says it is."""

import hashlib
import hmac
import json
import os

from app import crypto
from app.catalog import resources as catalog
from app.catalog.kinds import RESOURCE_KINDS, TRIGGER
from app.catalog.scopes import create_scope
from app.catalog.sealed import reseal_catalog
from app.catalog.store import fetch
from app.graph.digests import python_digest
from app.graph.links import read_links
from app.graph.rotation import rotate
from app.graph.write.version import write_version
from app.iac.state import SEALED_PREFIX, reseal_state_secrets, secret_key
from tests.helpers.links import SERVERS, app, network

KEY = os.urandom(32)
SECRET = {"value": "s3cr3t-rotated-out", "type": "string", "sensitive": True}


async def test_keyed_digests_are_hmacs() -> None:
    ring = crypto.Keyring(KEY)
    assert ring.current is not None
    key = hmac.new(ring.current.mac_key, b"output digest", hashlib.sha256).digest()
    expected = hmac.new(key, b'"x"', hashlib.sha256).hexdigest()
    assert python_digest('"x"', ring) == f"k{ring.current.id.hex()}:{expected}"
    assert python_digest('"x"', crypto.Keyring()) == hashlib.md5(b'"x"').hexdigest()


async def test_rotation_keys_the_digests_and_links_stay_fresh(conn) -> None:
    await write_version(conn, "team/net", network(secret=SECRET), actor="t", servers=SERVERS)
    read = {"vpc_id": "vpc-0a1b2c3d4e5f60718", "secret": SECRET["value"]}
    await write_version(conn, "team/app", app(read=read), actor="t", servers=SERVERS)
    md5 = hashlib.md5(json.dumps(SECRET["value"]).encode()).hexdigest()
    stored = "SELECT value_digest FROM outputs WHERE name = 'secret'"
    assert await conn.fetchval(stored) == md5  # without a key: as before
    with crypto.using(crypto.Keyring(KEY)) as ring:
        done = await rotate(conn)
        assert done.counts["digests"] >= 5 and done.counts["links"] == 1
        assert await conn.fetchval(stored) == python_digest(json.dumps(SECRET["value"]), ring)
        links = str(await conn.fetch("SELECT outputs FROM state_links"))
        assert md5 not in links and python_digest(json.dumps(SECRET["value"]), ring) in links
        [link] = await read_links(conn)
        assert not link["stale"]
        again = await rotate(conn)
        assert again.counts["digests"] == 0 and again.counts["links"] == 0


async def test_rotation_seals_a_consumer_s_copy_written_before(conn) -> None:
    plain = {**SECRET, "sensitive": False}
    await write_version(conn, "team/net", network(secret=plain), actor="t", servers=SERVERS)
    read = {"vpc_id": "vpc-0a1b2c3d4e5f60718", "secret": SECRET["value"]}
    await write_version(conn, "team/app", app(read=read), actor="t", servers=SERVERS)
    # as a consumer row written before producers' sensitive outputs were sealed in it
    await conn.execute("UPDATE outputs SET sensitive = true WHERE name = 'secret'")
    in_clear = "SELECT count(*) FROM resources WHERE attributes::text LIKE '%s3cr3t%'"
    assert await conn.fetchval(in_clear) == 2  # both data sources (one reads elsewhere)
    with crypto.using(crypto.Keyring(KEY)):
        done = await rotate(conn)
        assert done.counts["consumers"] == 1
        assert await conn.fetchval(in_clear) == 1  # the one reading another server's
        assert (await rotate(conn)).counts["consumers"] == 0


async def test_rotation_splits_the_catalog_and_hashes_iac_state(conn) -> None:
    scope = await create_scope(conn, "crm", "CRM")
    table = await catalog.create(conn, "table", scope["id"], {"name": "Contacts"})
    trigger = await catalog.create(conn, "trigger", table["id"], {"event": "insert"})
    action = {"url": "https://x.test", "secret": "s3cr3t-hook", "headers": {"x_token": "t0k"}}
    # as stored before the catalog kept secrets apart
    await conn.execute("UPDATE triggers SET action = $1 WHERE id = $2", action, trigger["id"])
    await conn.execute(
        """INSERT INTO iac_state (scope_id, system, resource_type, ref, resource_id,
                                  last_applied_spec, updated_at)
           VALUES ($1, 'crm', 'trigger', 'contacts.t', $2, $3, now())""",
        scope["id"],
        trigger["id"],
        {"action": {"api_token": "t0k-clear", "secret": SEALED_PREFIX + "00"}},
    )
    shown = await fetch(conn, TRIGGER, trigger["id"])  # masked by name meanwhile
    assert shown["action"] == {**action, "secret": "(secret)", "headers": {"x_token": "(secret)"}}
    with crypto.using(crypto.Keyring(KEY)):
        kinds = list(RESOURCE_KINDS.values())
        assert await reseal_catalog(conn, kinds) == 1
        assert await reseal_catalog(conn, kinds) == 0
        assert "s3cr3t" not in str(await conn.fetch("SELECT * FROM triggers"))
        assert (await fetch(conn, TRIGGER, trigger["id"], reveal=True))["action"] == action
        key = await secret_key(conn, None)
        assert await reseal_state_secrets(conn, key) == 1
        remembered = await conn.fetchval("SELECT last_applied_spec FROM iac_state")
        assert remembered["action"]["secret"] == SEALED_PREFIX + "00"  # hashed already
        assert remembered["action"]["api_token"].startswith(SEALED_PREFIX)
        # a write giving the mask back keeps the secret; a new value replaces it
        await catalog.update(conn, "trigger", trigger["id"], {"action": shown["action"]})
        assert (await fetch(conn, TRIGGER, trigger["id"], reveal=True))["action"] == action
        changed = {**action, "secret": "new-one"}
        await catalog.update(conn, "trigger", trigger["id"], {"action": changed})
        assert (await fetch(conn, TRIGGER, trigger["id"], reveal=True))["action"] == changed
