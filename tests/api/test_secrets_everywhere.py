"""Secrets in every copy, against the real server with an encryption key: IaC secret
fields masked for readers in the catalog, export and the IaC state; a producer's
sensitive output sealed in its consumer's row whatever happens to the producer; and a
pg_dump that holds none of the planted secrets in any form (clear, base64, hex, or an
unkeyed MD5/SHA-1/SHA-256 of itself)."""

import base64
import hashlib
import json
import os
from typing import Any

import httpx

from app import crypto
from app.graph.digests import python_digest
from tests.helpers.live_server import LiveServer, server_fixture
from tests.helpers.postgres_tools import pg_dump
from tests.helpers.states import resource, state

BOOT = "boot-secret"
KEY = os.urandom(32)
server = server_fixture(
    {
        "INFRAGRAPH_API_TOKENS": f"boot:{BOOT}",
        "INFRAGRAPH_ENCRYPTION_KEY": base64.b64encode(KEY).decode(),
    },
    scope="module",
)
JSON_BODY = {"Content-Type": "application/json"}
SLUG = "crm"

TRIGGER_SECRET = "trigger-secret-planted"
API_TOKEN = "api-token-planted"
SETTINGS_KEY = "settings-key-planted"
OUTPUT_SECRET = "producer-output-planted"
LATE_SECRET = "late-output-planted"
ATTRIBUTE_SECRET = "attribute-password-planted"
BACKEND_PASSWORD = "backend-password-planted"


def document(hook: str = "https://hooks.example/contacts") -> str:
    lines: list[dict[str, Any]] = [
        {"kind": "header", "system": "crm", "version": 1},
        {
            "kind": "table",
            "ref": "contacts",
            "spec": {"name": "Contacts", "settings": {"color": "red", "deploy_key": SETTINGS_KEY}},
        },
        {
            "kind": "column",
            "table": "contacts",
            "ref": "email",
            "spec": {"name": "Email", "type": "text"},
        },
        {
            "kind": "trigger",
            "table": "contacts",
            "ref": "notify",
            "spec": {
                "event": "insert",
                "action": {
                    "url": hook,
                    "secret": TRIGGER_SECRET,
                    "headers": {"api_token": API_TOKEN},
                },
            },
        },
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)


def _client(server: LiveServer, token: str) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}", **JSON_BODY}
    return httpx.Client(base_url=server.url, headers=headers, timeout=60)


def _gql(client: httpx.Client, query: str, **variables: Any) -> Any:
    response = client.post("/graphql", json={"query": query, "variables": variables})
    body = response.json()
    assert response.status_code == 200 and not body.get("errors"), response.text
    return body["data"]


CREATE_TOKEN = """mutation($name: String!, $role: Role!, $states: [String!], $scopes: [String!]) {
  createToken(name: $name, role: $role, states: $states, scopes: $scopes) { secret } }"""
PLAN = "mutation($s: String!, $d: String!) { plan(scope: $s, document: $d) { hash } }"
APPLY = """mutation($s: String!, $d: String!, $h: String!) {
  apply(scope: $s, document: $d, hash: $h) { stateName } }"""
CATALOG = """query($s: String!) { scope(slug: $s) {
  tables { settings triggers { action } } } }"""
EXPORT = 'query($s: String!) { export(scope: $s, system: "crm") }'
ATTRIBUTES = """query($state: String!, $attributes: JSON) {
  resources(filter: {state: $state, attributes: $attributes}) {
    edges { node { address attributes } } } }"""


def _token(admin: httpx.Client, name: str, role: str) -> str:
    reach = {"states": ["team/*"], "scopes": [SLUG]}
    secret: str = _gql(admin, CREATE_TOKEN, name=name, role=role, **reach)["createToken"]["secret"]
    return secret


def _apply_iac(admin: httpx.Client) -> None:
    _gql(admin, 'mutation { createScope(slug: "crm", name: "CRM") { id } }')
    planned = _gql(admin, PLAN, s=SLUG, d=document())["plan"]["hash"]
    _gql(admin, APPLY, s=SLUG, d=document(), h=planned)


def _address(server: LiveServer, name: str) -> str:
    return f"{server.url}/states/{name.replace('/', '%2F')}"


def producer(serial: int = 1, *, late_sensitive: bool = False) -> bytes:
    outputs = {
        "vpc_id": {"value": "vpc-0a1b2c3d4e5f", "type": "string"},
        "db_password": {"value": OUTPUT_SECRET, "type": "string", "sensitive": True},
        "late": {"value": LATE_SECRET, "type": "string", "sensitive": late_sensitive},
    }
    db = resource(
        "aws_db_instance",
        "db",
        attributes={"id": "db-1", "password": ATTRIBUTE_SECRET},
        sensitive=[[{"type": "get_attr", "value": "password"}]],
    )
    return state([db], serial=serial, outputs=outputs)


def consumer(server: LiveServer, serial: int = 1, *, producer_name: str = "team/net") -> bytes:
    read = {"vpc_id": "vpc-0a1b2c3d4e5f", "db_password": OUTPUT_SECRET, "late": LATE_SECRET}
    config = {"address": _address(server, producer_name), "password": BACKEND_PASSWORD}
    data = resource(
        "terraform_remote_state",
        "net",
        mode="data",
        provider='provider["terraform.io/builtin/terraform"]',
        attributes={
            "backend": "http",
            "config": {"value": config, "type": ["object", dict.fromkeys(config, "string")]},
            "defaults": None,
            "outputs": {"value": read, "type": ["object", dict.fromkeys(read, "string")]},
            "workspace": None,
        },
    )
    return state([data], serial=serial)


def _post(client: httpx.Client, name: str, body: bytes) -> None:
    response = client.post(f"/states/{name}", content=body)
    assert response.status_code == 200, response.text


def _read_outputs(reader: httpx.Client, name: str) -> dict[str, Any]:
    [edge] = _gql(reader, ATTRIBUTES, state=name)["resources"]["edges"]
    outputs: dict[str, Any] = edge["node"]["attributes"]["outputs"]["value"]
    return outputs


def _found_by_search(reader: httpx.Client, name: str, output: str, value: str) -> bool:
    wanted = {"outputs": {"value": {output: value}}}
    return bool(_gql(reader, ATTRIBUTES, state=name, attributes=wanted)["resources"]["edges"])


def test_iac_secret_fields_are_masked_for_readers(server: LiveServer, conn) -> None:
    with _client(server, BOOT) as admin:
        _apply_iac(admin)
        read = _token(admin, "dash", "READ")
    planted = (TRIGGER_SECRET, API_TOKEN, SETTINGS_KEY)
    with _client(server, read) as reader:
        [table] = _gql(reader, CATALOG, s=SLUG)["scope"]["tables"]
        assert table["triggers"] == [
            {
                "action": {
                    "url": "https://hooks.example/contacts",
                    "secret": "(secret)",
                    "headers": {"api_token": "(secret)"},
                }
            }
        ]
        assert table["settings"]["deploy_key"] == "(secret)"
        exported = _gql(reader, EXPORT, s=SLUG)["export"]
        assert '"secret":"(secret)"' in exported.replace(" ", "")
        iac_state = reader.get(f"/states/iac:{SLUG}/crm")
        assert iac_state.status_code == 200
        for shown in (json.dumps(table), exported, iac_state.text):
            assert [s for s in planted if s in shown] == []
    with _client(server, BOOT) as admin:
        # the secrets are there for what acts on them: the same document plans no change
        planned = _gql(
            admin,
            "mutation($s: String!, $d: String!) { plan(scope: $s, "
            "document: $d) { summary { update } } }",
            s=SLUG,
            d=document(),
        )
        assert planned["plan"]["summary"]["update"] == 0


def test_a_consumer_keeps_a_sensitive_output_sealed_when_the_producer_goes(
    server: LiveServer, conn
) -> None:
    with _client(server, BOOT) as admin:
        _post(admin, "team/net", producer())
        _post(admin, "team/app", consumer(server))
        read = _token(admin, "dash", "READ")
        with _client(server, read) as reader:
            assert _read_outputs(reader, "team/app")["db_password"] is None
        assert admin.delete("/states/team/net").status_code == 200
    with _client(server, read) as reader:
        outputs = _read_outputs(reader, "team/app")
        assert outputs["db_password"] is None and outputs["vpc_id"] == "vpc-0a1b2c3d4e5f"
        assert not _found_by_search(reader, "team/app", "db_password", OUTPUT_SECRET)
        assert _found_by_search(reader, "team/app", "vpc_id", "vpc-0a1b2c3d4e5f")


def test_an_output_marked_sensitive_after_its_consumer_was_written(
    server: LiveServer, conn
) -> None:
    with _client(server, BOOT) as admin:
        _post(admin, "team/app", consumer(server))  # no producer yet: nothing to seal
        read = _token(admin, "dash", "READ")
        with _client(server, read) as reader:
            assert _read_outputs(reader, "team/app")["late"] == LATE_SECRET
        _post(admin, "team/net", producer(late_sensitive=True))  # re-seals its consumers
        assert admin.delete("/states/team/net").status_code == 200
    with _client(server, read) as reader:
        assert _read_outputs(reader, "team/app")["late"] is None
        assert not _found_by_search(reader, "team/app", "late", LATE_SECRET)


def _forms(secret: str) -> dict[str, str]:
    """How a secret could be spelled in a dump."""
    raw = secret.encode()
    forms = {
        "clear": secret,
        "hex": raw.hex(),
        "base64": base64.b64encode(raw).decode().rstrip("="),
        "base64url": base64.urlsafe_b64encode(raw).decode().rstrip("="),
    }
    for name in ("md5", "sha1", "sha256"):
        digest = hashlib.new(name, raw).digest()
        forms[name] = digest.hex()
        forms[f"{name} base64"] = base64.b64encode(digest).decode().rstrip("=")
    # and a digest of its JSON text (what a JSONB value is hashed as)
    json_text = json.dumps(secret).encode()
    for name in ("md5", "sha1", "sha256"):
        forms[f"{name} of its JSON"] = hashlib.new(name, json_text).hexdigest()
    return forms


def leaks(dump: str, secrets: list[str]) -> list[str]:
    return [
        f"{secret} ({form})"
        for secret in secrets
        for form, spelled in _forms(secret).items()
        if spelled in dump
    ]


def test_a_dump_holds_no_planted_secret_in_any_form(
    server: LiveServer, conn, database_url: str
) -> None:
    with _client(server, BOOT) as admin:
        _post(admin, "team/app-first", consumer(server, producer_name="team/late"))
        _post(admin, "team/net", producer(late_sensitive=True))
        _post(admin, "team/app", consumer(server))
        _post(admin, "team/late", producer(late_sensitive=True))
        _apply_iac(admin)
        token = _token(admin, "ci", "WRITE")
    dump = pg_dump(database_url)
    assert "team/app-first" in dump and "contacts" in dump  # the rows were dumped
    planted = [
        TRIGGER_SECRET,
        API_TOKEN,
        SETTINGS_KEY,
        OUTPUT_SECRET,
        LATE_SECRET,
        ATTRIBUTE_SECRET,
        BACKEND_PASSWORD,
        token,
        token.removeprefix("igt_"),
    ]
    assert leaks(dump, planted) == []
    # the digests a link compares are there, keyed: none is the MD5 it used to be
    assert python_digest(json.dumps(OUTPUT_SECRET), crypto.Keyring(KEY)) in dump
