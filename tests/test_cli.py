"""The `infragraph` command against a live server with a token, with no DATABASE_URL in
its environment: IaC plan/apply/export-iac/release and Terraform states import/export/
states/lock/unlock/force-unlock, all through the server's API; exit codes 0/1/2."""

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.jsonutil import dumps
from bench.generate import generate_state
from tests.helpers.cli import TOKEN, Cli, cli_server
from tests.helpers.histories import exports_as_posted, write_all
from tests.helpers.iac import DOCUMENT, RESOURCE_LINES, SLUG
from tests.helpers.live_server import LiveServer
from tests.helpers.states import shared_history

pytestmark = pytest.mark.slow  # runs the CLI in processes of its own

server = cli_server()


@pytest.fixture
def cli(server: LiveServer, conn, tmp_path: Path) -> Cli:
    """The CLI on an emptied database holding the scope SLUG (made through GraphQL)."""
    response = httpx.post(
        f"{server.url}/graphql",
        json={"query": f'mutation {{ createScope(slug: "{SLUG}", name: "CRM") {{ id }} }}'},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert "errors" not in response.json(), response.text
    return Cli(server, tmp_path / "home")


def test_iac_plan_apply_export_and_release(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "crm.jsonl"
    path.write_text(DOCUMENT)
    code, out, err = cli("plan", "--scope", SLUG, str(path))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:2] == [
        "system: crm",
        "summary: create 4, update 0, delete 0, move 0, adopt 0, orphaned 0, noop 0, "
        "insert 2, skip 0",
    ]
    actions = [line for line in lines if line.startswith("  ") and not line.startswith("    ")]
    assert len(actions) == 6
    for (kind, ref), line in RESOURCE_LINES.items():
        assert any(a.startswith(f"  create {kind} {ref} (line {line})") for a in actions), out
    assert sum(a.startswith("  insert record ") for a in actions) == 2
    assert '      name: desired "Contacts", last applied null, live null (create)' in lines
    plan_hash = lines[-1].removeprefix("hash: ")
    assert re.fullmatch(r"[0-9a-f]{64}", plan_hash)

    code, out, err = cli("plan", "--scope", SLUG, "--json", "--detailed-exitcode", str(path))
    assert code == 2, err  # changes
    planned = json.loads(out)
    assert planned["hash"] == plan_hash and planned["summary"]["create"] == 4
    assert {
        (a["kind"], a["ref"]): a["line"] for a in planned["actions"] if a["kind"] != "record"
    } == (RESOURCE_LINES)

    code, out, err = cli("apply", "--scope", SLUG, "--hash", "0" * 64, str(path))
    assert code == 1 and out == ""
    assert err.startswith("infragraph: ") and "stale" in err.lower()
    code, out, err = cli("apply", "--scope", SLUG, "--hash", plan_hash, str(path))
    assert code == 0, err
    assert out.splitlines()[0] == f"applied: iac:{SLUG}/crm serial 1"

    code, exported, err = cli("export-iac", "--scope", SLUG, "--system", "crm")
    assert code == 0, err
    code, out, err = cli(
        "plan", "--scope", SLUG, "--detailed-exitcode", "-", stdin=exported.encode()
    )
    assert code == 0, err  # no changes
    lines = out.splitlines()
    assert lines[1] == (
        "summary: create 0, update 0, delete 0, move 0, adopt 0, orphaned 0, noop 4, "
        "insert 0, skip 2"
    )
    assert len(lines) == 3 and lines[2].startswith("hash: ")  # no action to show

    code, out, err = cli("release", "--scope", SLUG, "--system", "crm", "contacts")
    assert code == 0, err
    assert out.splitlines() == [
        "released: contacts, contacts.adults, contacts.age, contacts.email",
        f"recorded: iac:{SLUG}/crm serial 2",
    ]
    code, out, err = cli("plan", "--scope", SLUG, "--json", str(path))
    assert {a["action"] for a in json.loads(out)["actions"] if a["kind"] != "record"} == {"adopt"}
    code, _, err = cli("release", "--scope", SLUG, "--system", "crm", "contacts")
    assert code == 1 and "manages no contacts" in err


def test_refusals_and_usage_errors(cli: Cli, server: LiveServer, tmp_path: Path) -> None:
    bad = b'{"kind": "header", "system": "crm", "version": 1}\n{"kind": "table", "ref": "X"}\n'
    code, out, err = cli("plan", "--scope", SLUG, "-", stdin=bad)
    assert code == 1 and out == ""
    assert any(line.startswith("infragraph: line 2 (table") for line in err.splitlines()), err
    invalid = DOCUMENT.encode().replace(b"Contacts", b"Contacts \xff", 1)  # not UTF-8
    code, out, err = cli("plan", "--scope", SLUG, "-", stdin=invalid)
    assert code == 1 and out == ""
    assert "infragraph: line 2: not valid UTF-8 (byte 65)" in err.splitlines(), err
    code, _, err = cli("plan", "--scope", "nope", "-", stdin=DOCUMENT.encode())
    assert code == 1 and err.startswith("infragraph: ") and "nope" in err
    code, _, err = cli("plan", "-", stdin=DOCUMENT.encode())  # no --scope
    assert code == 2 and "--scope" in err
    code, _, err = cli("frobnicate")
    assert code == 2
    code, _, err = Cli(server, tmp_path, token=None)("states")
    assert code == 1 and "INFRAGRAPH_TOKEN" in err
    code, _, err = Cli(server, tmp_path, token="wrong")(
        "export-iac", "--scope", SLUG, "--system", "crm"
    )
    assert code == 1 and "INFRAGRAPH_TOKEN" in err
    # the CLI never opened a database, not even an embedded one
    assert not (tmp_path / "home").exists()


def test_states_import_export_and_locks(cli: Cli, tmp_path: Path) -> None:
    state = generate_state(9_000, seed=3)  # over 8 MiB: the upload shows its progress
    path = tmp_path / "net.tfstate"
    path.write_bytes(dumps(state))
    assert path.stat().st_size > 8 * 1024 * 1024
    code, out, err = cli("import", "team/net", str(path))
    assert code == 0, err
    assert "uploading" in err and err.splitlines()[-1] == "imported: team/net serial 1"
    code, out, err = cli("export", "team/net")
    assert code == 0, err
    assert json.loads(out) == state
    code, out, err = cli("export", "team/net", "--serial", "7")
    assert code == 1 and "7" in err

    code, out, err = cli("states", "--json")
    assert code == 0, err
    [listed] = json.loads(out)
    assert (listed["name"], listed["currentVersion"]["serial"], listed["lock"]) == (
        "team/net",
        1,
        None,
    )

    code, lock_id, err = cli("lock", "team/net", "--info", "maintenance")
    assert code == 0, err
    lock_id = lock_id.strip()
    code, out, _ = cli("states")
    assert out.splitlines() == [f"team/net  terraform  serial 1  locked by {_who(out)} ({lock_id})"]
    code, _, err = cli("lock", "team/net")
    assert code == 1 and lock_id in err  # held: the holder's lock ID
    code, _, err = cli("unlock", "team/net", lock_id)
    assert code == 0 and "unlocked: team/net" in err

    code, other, _ = cli("lock", "team/net")
    assert code == 0
    code, _, err = cli("unlock", "team/net", lock_id)  # not the holder
    assert code == 1 and other.strip() in err
    code, _, err = cli("force-unlock", "team/net")
    assert code == 0 and "unlocked: team/net" in err
    code, out, _ = cli("states", "--json")
    assert json.loads(out)[0]["lock"] is None


def _who(listing: str) -> Any:
    return re.search(r"locked by (\S+)", listing).group(1)  # type: ignore[union-attr]


async def test_prune_through_the_api(cli: Cli, conn) -> None:
    posted = await write_all(conn, "cli/net", shared_history())
    await conn.execute("UPDATE state_versions SET created_at = now() - interval '2 days'")
    args = ("prune", "--state", "cli/*", "--keep-last", "2", "--keep-days", "1")
    code, out, err = cli(*args)
    assert code == 0, err
    assert out == "cli/net: pruned serials 1, 2, 3, 4 (2 resources, 4 edges, 0 outputs, 4 chunks)\n"
    await exports_as_posted(conn, "cli/net", {5: posted[5], 6: posted[6]})
    code, out, _ = cli(*args)
    assert code == 0 and "nothing to prune" in out
    assert cli("prune", "--state", "x", "--keep-last", "0")[0] == 2  # usage
