"""`infragraph policy create | list | delete` against a live server with a token, as
tests/test_cli.py runs the other commands; and a plan's `violation:` lines."""

from pathlib import Path

import httpx
import pytest

from tests.helpers.cli import TOKEN, Cli, cli_server
from tests.helpers.live_server import LiveServer
from tests.helpers.states import resource, state

pytestmark = pytest.mark.slow  # runs the CLI in processes of its own

server = cli_server()
AUTH = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
HEADER = '{"kind": "header", "system": "crm", "version": 1}\n'
TABLE = '{"kind": "table", "ref": "contacts", "spec": {"name": "Contacts"}}\n'


def test_policy_create_list_delete(server: LiveServer, conn, tmp_path: Path) -> None:
    buckets = [resource("aws_s3_bucket", name, attributes={"acl": "public-read"}) for name in "ab"]
    response = httpx.post(f"{server.url}/states/prod/s3", content=state(buckets), headers=AUTH)
    assert response.status_code == 200, response.text
    cli = Cli(server, tmp_path / "home")
    args = ("--type", "aws_s3_*", "--condition", '$.acl == "public-read"')
    made = cli("policy", "create", "public", *args, "--severity", "critical", "--enforce")
    assert made == (0, "created: public (2 open)\n", "")
    code, _, err = cli("policy", "create", "public", *args)
    assert code == 1 and err == "infragraph: a policy named 'public' exists\n"
    code, _, err = cli("policy", "create", "typo", "--type", "*", "--condition", "$.a ==")
    assert code == 1
    assert err == "infragraph: invalid condition: syntax error at end of jsonpath input\n"
    code, _, err = cli("policy", "create", "nothing", "--condition", "true")  # no --type
    assert code == 2 and "--type" in err
    code, out, _ = cli("policy", "list")
    assert (code, out) == (
        0,
        'public\tcritical enforce\tresourceType=aws_s3_*\t$.acl == "public-read"\t2 open\n',
    )
    assert cli("policy", "delete", "public") == (0, "deleted: public\n", "")
    assert cli("policy", "list", "--json") == (0, "[]\n", "")


def test_a_plan_shows_the_violations_its_apply_would_open(
    server: LiveServer, conn, tmp_path: Path
) -> None:
    scope = 'mutation { createScope(slug: "crm", name: "CRM") { id } }'
    response = httpx.post(f"{server.url}/graphql", json={"query": scope}, headers=AUTH)
    assert "errors" not in response.json(), response.text
    cli = Cli(server, tmp_path / "home")
    condition = ("--condition", "!exists($.description)", "--enforce")
    assert cli("policy", "create", "described", "--type", "table", *condition)[0] == 0
    code, out, err = cli("plan", "--scope", "crm", "-", stdin=(HEADER + TABLE).encode())
    assert code == 0, err
    assert (
        "violation: contacts would violate policy described (warning, enforced: apply will "
        "refuse)" in out.splitlines()
    )
    plan_hash = out.splitlines()[-1].removeprefix("hash: ")
    code, _, err = cli(
        "apply", "--scope", "crm", "--hash", plan_hash, "-", stdin=(HEADER + TABLE).encode()
    )
    assert code == 1
    assert err == (
        "infragraph: refused by enforced policies: contacts violates described (warning)\n"
    )
