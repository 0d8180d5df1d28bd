"""`infragraph token create|list|revoke` against a live server, as an admin would run it;
the token it prints works, with its role and reach, until revoked."""

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.helpers.backend import tf_state
from tests.helpers.cli import Cli, cli_server
from tests.helpers.live_server import LiveServer

pytestmark = pytest.mark.slow  # runs the CLI in processes of its own

server = cli_server()


def test_create_list_use_and_revoke(server: LiveServer, conn, tmp_path: Path) -> None:
    admin = Cli(server, tmp_path / "home")
    code, out, err = admin(
        "token",
        "create",
        "ci",
        "--role",
        "write",
        "--states",
        "team/*",
        "--states",
        "ops/*",
        "--scopes",
        "crm",
        "--expires",
        "30",
    )
    assert code == 0, err
    *said, secret = out.splitlines()  # the token is the last line of stdout
    assert said[0].startswith("created: ci (write, team/*,ops/*,scope:crm, expires ")
    assert secret.startswith("igt_")

    ci = Cli(server, tmp_path / "ci", token=secret)
    state = tmp_path / "state.tfstate"
    state.write_bytes(tf_state())
    code, out, err = ci("import", "team/app", str(state))
    assert code == 0, err
    code, out, err = ci("import", "other/app", str(state))
    assert code == 1 and "outside its states (team/*, ops/*, iac:crm/*)" in err
    code, out, err = ci("token", "list")
    assert code == 1 and "needs the admin role" in err

    code, out, err = admin("token", "list", "--json")
    assert code == 0, err
    [listed] = json.loads(out)
    assert (listed["name"], listed["role"], listed["states"], listed["scopes"]) == (
        "ci",
        "WRITE",
        ["team/*", "ops/*"],
        ["crm"],
    )
    assert listed["lastUsedAt"] is not None and secret not in out
    code, out, err = admin("token", "revoke", "ci")
    assert (code, out) == (0, "revoked: ci\n"), err
    code, out, err = admin("token", "list")
    assert code == 0 and out.startswith("ci\twrite\tteam/*,ops/*,scope:crm\trevoked\t")
    code, out, err = ci("states")
    assert code == 1 and "INFRAGRAPH_TOKEN" in err  # 401 now
    code, out, err = admin("token", "create", "bad", "--role", "read", "--states", "iac:crm/*")
    assert code == 1 and "by their scope" in err


def test_a_fractional_expiry_is_kept(server: LiveServer, conn, tmp_path: Path) -> None:
    admin = Cli(server, tmp_path / "home")
    code, out, err = admin("token", "create", "half", "--role", "read", "--expires", "0.5")
    assert code == 0, err
    code, out, err = admin("token", "list", "--json")
    assert code == 0, err
    [listed] = json.loads(out)
    lasts = datetime.fromisoformat(listed["expiresAt"]) - datetime.fromisoformat(
        listed["createdAt"]
    )
    assert abs(lasts - timedelta(hours=12)) < timedelta(seconds=1), lasts


def test_a_plan_token_and_whoami(server: LiveServer, conn, tmp_path: Path) -> None:
    admin = Cli(server, tmp_path / "home")
    code, out, err = admin("token", "create", "web-pr", "--role", "plan", "--states", "apps/*")
    assert code == 0, err
    *said, secret = out.splitlines()
    assert said[0] == "created: web-pr (plan, apps/*); the token, shown only now:"
    pr = Cli(server, tmp_path / "pr", token=secret)
    code, out, err = pr("whoami", "--state", "apps/web")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:5] == [
        "token: web-pr",
        "role: plan",
        "states: apps/*",
        "scopes: none",
        "on apps/web: read, outputs, sensitiveOutputs, rawState, planLock",
    ]
    assert "  yes rawState: terraform init, plan -lock=false, output, state pull" in lines
    assert "  no  write: terraform apply, state push, a lock for anything, delete" in lines
    code, out, err = pr("whoami", "--state", "net/core")
    assert code == 0 and "on net/core: nothing" in out, err
    code, out, err = admin("whoami")
    assert (code, out) == (0, "token: ci\nrole: admin\nstates: everything\nscopes: everything\n")
    code, out, err = admin("readers", "set", "net/core", "--states", "apps/*")
    assert code == 1 and "no state 'net/core'" in err
    state = tmp_path / "state.tfstate"
    state.write_bytes(tf_state())
    assert admin("import", "net/core", str(state))[0] == 0
    code, out, err = admin("readers", "set", "net/core", "--states", "apps/*", "--token", "x")
    assert code == 0, err
    assert admin("readers", "show", "net/core")[1] == "tokens: x\nstates: apps/*\n"
    code, out, err = pr("whoami", "--state", "net/core")
    assert "on net/core: outputs, sensitiveOutputs" in out, err
