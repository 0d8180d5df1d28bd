"""A state with secrets planted where Terraform keeps them (a sensitive attribute, a
nested one, a remote state's config, a sensitive output), and what of them a database
dump gives away."""

import hashlib
import json

from tests.helpers.states import PASSWORD, resource

# every planted secret: none may reach a dump in clear (nor as bytea hex)
PLANTED = ("hunter2-planted", "nested-planted", "remote-password-planted", "output-planted")
# a raw-state marker: the key every state document has, and a zstd frame's magic bytes
RAW_MARKERS = ('"terraform_version"', "\\x28b52ffd")


def secret_state(serial: int = 1, password: str = "hunter2-planted") -> bytes:
    db = resource(
        "aws_db_instance",
        "db",
        attributes={"password": password, "engine": "postgres"},
        sensitive=PASSWORD,
    )
    api = resource(
        "aws_api",
        "api",
        attributes={"auth": {"key": "nested-planted", "user": "bob"}},
        sensitive=[[{"type": "get_attr", "value": "auth"}, {"type": "get_attr", "value": "key"}]],
    )
    remote = resource(
        "terraform_remote_state",
        "net",
        mode="data",
        attributes={
            "backend": "http",
            "config": {
                "value": {"address": "http://x", "password": "remote-password-planted"},
                "type": ["object", {"address": "string", "password": "string"}],
            },
        },
    )
    return json.dumps(
        {
            "version": 4,
            "terraform_version": "1.15.5",
            "serial": serial,
            "lineage": "l",
            "outputs": {
                "db_password": {"value": "output-planted", "type": "string", "sensitive": True},
                "plain": {"value": "visible", "type": "string"},
            },
            "resources": [db, api, remote],
        },
        indent=2,
    ).encode()


def leaks(dump: str, bodies: list[bytes]) -> list[str]:
    """What of the planted secrets, raw markers and hashes of the bodies the dump holds:
    in clear, or as bytea hex."""
    found = [s for s in PLANTED if s in dump or s.encode().hex() in dump]
    found += [m for m in RAW_MARKERS if m in dump or m.encode().hex() in dump]
    for body in bodies:
        found += [
            f"{name} of a body"
            for name, digest in (("md5", hashlib.md5), ("sha256", hashlib.sha256))
            if digest(body).hexdigest() in dump
        ]
    return found
