"""`infragraph impact` against a live server: exit 0 with no finding at --fail-on, 1 with
one (or when the server refuses the plan), 2 on a usage error; its three formats."""

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.helpers.live_server import LiveServer, server_fixture
from tests.helpers.plans import as_bytes, change, plan
from tests.helpers.states import resource, state

pytestmark = pytest.mark.slow  # runs the CLI in processes of its own

server = server_fixture(scope="module")
JSON = {"Content-Type": "application/json"}
BUCKET = {"id": "logs", "acl": "private"}
POLICY = """mutation($input: CreatePolicyInput!) { createPolicy(input: $input) { name } }"""


def _impact(server: LiveServer, *args: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [Path(sys.executable).parent / "infragraph", "impact", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"INFRAGRAPH_URL": server.url, "PATH": ""},
    )
    return done.returncode, done.stdout, done.stderr


def _policy(server: LiveServer, name: str, severity: str, enforce: bool) -> None:
    policy = {
        "name": name,
        "severity": severity,
        "resourceType": "aws_s3_bucket",
        "condition": '$.acl == "public-read"',
        "enforce": enforce,
    }
    answer = httpx.post(
        f"{server.url}/graphql", json={"query": POLICY, "variables": {"input": policy}}
    )
    assert "errors" not in answer.json(), answer.text


def _plan_file(tmp_path: Path, acl: str) -> str:
    document = plan(
        [change("aws_s3_bucket.logs", ["update"], BUCKET, {**BUCKET, "acl": acl})],
        prior={"aws_s3_bucket.logs": BUCKET},
    )
    path = tmp_path / f"plan-{acl}.json"
    path.write_bytes(as_bytes(document))
    return str(path)


def test_exit_codes_and_formats(server: LiveServer, conn, tmp_path: Path) -> None:
    written = httpx.post(
        f"{server.url}/states/team/s3",
        content=state([resource("aws_s3_bucket", "logs", attributes=BUCKET)]),
        headers=JSON,
    )
    assert written.status_code == 200, written.text
    private, public = _plan_file(tmp_path, "private"), _plan_file(tmp_path, "public-read")
    public_bucket = {**BUCKET, "acl": "public-read"}
    code, out, err = _impact(server, "--state", "team/s3", public, "--fail-on", "warning")
    assert code == 0, err  # no policy yet: nothing to find
    assert "update   aws_s3_bucket.logs" in out

    _policy(server, "public-warn", "WARNING", enforce=False)
    code, out, err = _impact(server, "--state", "team/s3", public, "--fail-on", "critical")
    assert code == 0 and "policy public-warn (warning) would open" in out, (out, err)
    code, _, _ = _impact(server, "--state", "team/s3", public, "--fail-on", "warning")
    assert code == 1
    code, _, _ = _impact(server, "--state", "team/s3", private, "--fail-on", "warning")
    assert code == 0  # the planned values match no policy

    _policy(server, "public-enforced", "INFO", enforce=True)  # enforced: critical
    code, out, _ = _impact(
        server, "--state", "team/s3", public, "--fail-on", "critical", "--format", "json"
    )
    assert code == 1
    report = json.loads(out)
    assert report["blocked"] is True and {v["policy"] for v in report["violations"]} == {
        "public-warn",
        "public-enforced",
    }
    code, out, _ = _impact(server, "--state", "team/s3", public, "--format", "markdown")
    assert code == 0 and out.startswith("## Plan for `team/s3`") and "public-enforced" in out

    # violations the plan would resolve are said, and fail nothing
    written = httpx.post(
        f"{server.url}/states/team/s3",
        content=state([resource("aws_s3_bucket", "logs", attributes=public_bucket)], serial=2),
        headers=JSON,
    )
    assert written.status_code == 200, written.text
    code, out, err = _impact(server, "--state", "team/s3", private, "--fail-on", "warning")
    assert code == 0, (out, err)
    assert "policy public-enforced (info, enforced) would resolve on aws_s3_bucket.logs" in out

    # refused by the server, with its reason: exit 1
    bad = tmp_path / "bad.json"
    bad.write_text('{"format_version": "2.0", "resource_changes": []}')
    code, _, err = _impact(server, "--state", "team/s3", str(bad))
    assert code == 1 and "format_version" in err
    # usage errors: exit 2
    assert _impact(server, public)[0] == 2  # no --state
    assert _impact(server, "--state", "team/s3", public, "--format", "yaml")[0] == 2
    assert _impact(server, "--state", "team/s3", public, "--fail-on", "info")[0] == 2
