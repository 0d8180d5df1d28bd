"""app/tokens.py and app/auth.py's use of it: database tokens kept as hashes, their role
and reach, expiry, revocation (at once here, within the cache's seconds elsewhere),
last_used_at kept cheaply, the bootstrap tokens, an open server closing."""

import asyncio
import hashlib
import time
from datetime import timedelta

import asyncpg
import httpx
import pytest

from app import tokens
from app.access import Role
from app.auth import TokenCache
from app.errors import BadInput, Conflict
from tests.helpers.backend import assert_error, tf_state
from tests.helpers.live_server import live_server, server_fixture
from tests.helpers.postgres_tools import client_program
from tests.helpers.waiting import wait_until_sync

BOOT = "boot-secret"
server = server_fixture(
    {"INFRAGRAPH_API_TOKENS": f"boot:{BOOT}", "INFRAGRAPH_TOKEN_CACHE_SECONDS": "0.5"},
    scope="module",
)
CREATE = """mutation($name: String!, $role: Role!, $states: [String!], $days: Float) {
  createToken(name: $name, role: $role, states: $states, expiresDays: $days) {
    token { name role states scopes everywhere createdBy expiresAt } secret } }"""
JSON_BODY = {"Content-Type": "application/json"}


def _client(url: str, token: str | None) -> httpx.Client:
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=url, headers={**auth, **JSON_BODY}, timeout=30)


def _gql(client: httpx.Client, query: str, **variables: object) -> dict:
    body = client.post("/graphql", json={"query": query, "variables": variables}).json()
    assert not body.get("errors"), body
    return body["data"]


def _create(url: str, name: str, role: str = "WRITE", **variables: object) -> str:
    with _client(url, BOOT) as admin:
        made = _gql(admin, CREATE, name=name, role=role, **variables)["createToken"]
    assert made["token"]["createdBy"] == "boot"
    secret: str = made["secret"]
    return secret


async def test_a_token_is_kept_as_its_hash_only(conn, database_url) -> None:
    row, secret = await tokens.create_token(
        conn,
        "ci",
        Role.WRITE,
        state_globs=["team/*"],
        scopes=["crm"],
        expires_days=30,
        created_by="test",
    )
    assert secret.startswith("igt_") and len(secret) > 40
    assert "token_hash" not in row and secret not in str(row)
    kept = await conn.fetchval("SELECT token_hash FROM api_tokens WHERE name = 'ci'")
    # keyed: the plain hash of a token confirms nothing
    assert kept != hashlib.sha256(secret.encode()).digest()
    kept_rows = str(await conn.fetch("SELECT * FROM api_tokens"))
    assert hashlib.sha256(secret.encode()).hexdigest() not in kept_rows
    dumping = await asyncio.create_subprocess_exec(
        client_program("pg_dump"), "--data-only", database_url, stdout=asyncio.subprocess.PIPE
    )
    dump, _ = await dumping.communicate()
    assert dumping.returncode == 0
    assert b"api_tokens" in dump and b"team/*" in dump  # the table was dumped
    assert secret.encode() not in dump and secret.removeprefix("igt_").encode() not in dump
    found = await tokens.find_token(conn, secret)
    assert found is not None and found.principal.scopes == ("crm",) and not found.revoked
    assert await tokens.find_token(conn, secret + "x") is None


async def test_names_and_reach_are_checked(conn) -> None:
    made = {"state_globs": [], "scopes": [], "expires_days": None, "created_by": "t"}
    await tokens.create_token(conn, "a", Role.READ, **made)
    with pytest.raises(Conflict):
        await tokens.create_token(conn, "a", Role.READ, **made)
    with pytest.raises(BadInput):
        await tokens.create_token(conn, "a:b", Role.READ, **made)
    with pytest.raises(BadInput):
        await tokens.create_token(conn, "b", Role.READ, **{**made, "expires_days": 0})
    with pytest.raises(BadInput):
        await tokens.create_token(conn, "b", Role.READ, **{**made, "state_globs": ["iac:x/*"]})


async def test_last_used_at_is_written_at_most_once_a_minute(conn) -> None:
    _, secret = await tokens.create_token(
        conn, "ci", Role.READ, state_globs=[], scopes=[], expires_days=None, created_by="t"
    )
    used = "SELECT last_used_at FROM api_tokens WHERE name = 'ci'"
    assert await conn.fetchval(used) is None
    await tokens.find_token(conn, secret)
    first = await conn.fetchval(used)
    await tokens.find_token(conn, secret)
    assert await conn.fetchval(used) == first  # not written again within the minute
    await conn.execute("UPDATE api_tokens SET last_used_at = last_used_at - interval '61 s'")
    backdated = await conn.fetchval(used)
    await tokens.find_token(conn, secret)
    assert await conn.fetchval(used) - backdated > timedelta(seconds=59)  # a minute on: written


async def test_a_lookup_is_one_statement_a_miss_too(conn, monkeypatch) -> None:
    """An unknown token (anyone can send many) costs what a known one does; a key made
    anew by another process (a restore, an empty database) is still seen."""
    _, secret = await tokens.create_token(
        conn, "ci", Role.READ, state_globs=[], scopes=[], expires_days=None, created_by="t"
    )
    said: list[str] = []

    def log(query: asyncpg.connection.LoggedQuery) -> None:
        if "typeinfo_tree" not in query.query:  # not asyncpg's own type queries
            said.append(query.query)

    conn.add_query_logger(log)
    try:
        for token in (secret, "igt_unknown", "igt_unknown-again"):
            said.clear()
            await tokens.find_token(conn, token)
            await asyncio.sleep(0)  # asyncpg calls loggers soon, not at once
            assert len(said) == 1, (token, said)
    finally:
        conn.remove_query_logger(log)
    held = tokens._hash_key  # this process's key, as another process would still hold it
    await conn.execute("DELETE FROM iac_secret_key")
    _, remade = await tokens.create_token(
        conn, "cd", Role.READ, state_globs=[], scopes=[], expires_days=None, created_by="t"
    )
    monkeypatch.setattr(tokens, "_hash_key", held)
    found = await tokens.find_token(conn, remade)
    assert found is not None and found.principal.name == "cd"
    assert await tokens.find_token(conn, secret) is None  # made under the old key


async def test_the_cache_asks_the_database_once_per_ttl(pool, conn) -> None:
    _, secret = await tokens.create_token(
        conn, "ci", Role.READ, state_globs=[], scopes=[], expires_days=None, created_by="t"
    )
    cache = TokenCache(pool, ttl=3600)
    assert (await cache.find(secret)).principal.name == "ci"
    await conn.execute("UPDATE api_tokens SET revoked_at = now()")
    assert not (await cache.find(secret)).revoked  # the cached answer
    cache.forget()  # what revoking through this server does
    assert (await cache.find(secret)).revoked


def test_roles_reach_expiry_and_revocation_over_http(server, conn) -> None:
    ci = _create(server.url, "ci", states=["team/*"])
    old = _create(server.url, "old", days=1e-9)
    with _client(server.url, ci) as client:
        assert client.post("/states/team/a", content=tf_state()).status_code == 200
        refused = assert_error(client.post("/states/other/a", content=tf_state()), 403, "FORBIDDEN")
        assert "outside its states (team/*)" in refused["error"]
        # Basic auth, as Terraform sends it: the user must be the token's name
        assert client.get("/states/team/a", auth=("ci", ci)).status_code == 200
        assert client.get("/states/team/a", auth=("someone", ci)).status_code == 401
    with _client(server.url, old) as client:
        assert (
            "expired" in assert_error(client.get("/states/team/a"), 401, "UNAUTHENTICATED")["error"]
        )
    with _client(server.url, BOOT) as admin:
        listed = _gql(admin, "{ tokens { name role states revokedAt lastUsedAt } }")["tokens"]
        assert [(t["name"], t["role"], t["states"]) for t in listed] == [
            ("ci", "WRITE", ["team/*"]),
            ("old", "WRITE", []),
        ]
        assert listed[0]["lastUsedAt"] is not None and ci not in str(listed)
        _gql(admin, 'mutation { revokeToken(name: "ci") { revokedAt } }')
    with _client(server.url, ci) as client:  # at once: this server revoked it
        assert (
            "revoked" in assert_error(client.get("/states/team/a"), 401, "UNAUTHENTICATED")["error"]
        )


def _refused(response: httpx.Response) -> httpx.Response | None:
    return response if response.status_code == 401 else None


def test_another_server_stops_a_revoked_token_within_its_cache_seconds(
    server, conn, database_url
) -> None:
    ci = _create(server.url, "ci")
    env = {"INFRAGRAPH_API_TOKENS": f"boot:{BOOT}", "INFRAGRAPH_TOKEN_CACHE_SECONDS": "0.5"}
    with live_server(database_url, env) as other, _client(other.url, ci) as client:
        assert client.get("/metrics").status_code == 200
        with _client(server.url, BOOT) as admin:
            _gql(admin, 'mutation { revokeToken(name: "ci") { name } }')
        revoked = time.monotonic()
        refused = wait_until_sync(
            lambda: _refused(client.get("/metrics")), "the other server to refuse the token"
        )
        assert_error(refused, 401, "UNAUTHENTICATED")
        # within its cache seconds (0.5), and a request's time on a busy machine
        assert time.monotonic() - revoked < 0.5 + 2.5


def test_an_open_server_closes_with_its_first_token(conn, database_url) -> None:
    with live_server(database_url, {"INFRAGRAPH_API_TOKENS": None}) as open_server:
        with _client(open_server.url, None) as anyone:
            assert anyone.post("/states/a", content=tf_state()).status_code == 200
            secret = _gql(anyone, CREATE, name="first", role="ADMIN")["createToken"]["secret"]
            assert_error(anyone.get("/states/a"), 401, "UNAUTHENTICATED")
        with _client(open_server.url, secret) as admin:
            assert admin.get("/states/a").status_code == 200


def test_a_state_changing_body_must_be_json(server, conn) -> None:
    with _client(server.url, BOOT) as client:
        for content_type in ("text/plain", "application/x-www-form-urlencoded", None):
            headers = {"Content-Type": content_type} if content_type else {}
            for method in ("POST", "LOCK", "UNLOCK"):
                response = client.request(
                    method, "/states/a", content=tf_state(), headers=headers or {"Content-Type": ""}
                )
                assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")
        # Terraform's own: JSON, or no body at all (force-unlock)
        assert client.post("/states/a", content=tf_state()).status_code == 200
        assert client.request("UNLOCK", "/states/a", headers={"Content-Type": ""}).is_success
        # GraphQL refuses a form-shaped body too, and runs nothing
        mutation = 'mutation { createScope(slug: "x", name: "x") { id } }'
        plain = client.post("/graphql", content=mutation, headers={"Content-Type": "text/plain"})
        assert plain.status_code >= 400
        assert _gql(client, '{ scope(slug: "x") { id } }') == {"scope": None}
