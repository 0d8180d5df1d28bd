"""CI jobs signing in with OIDC ID tokens on a live server: what a rule grants, the
exchange for a server token, key rotation, the audit trail and lock ownership."""

import base64
import json
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.helpers.live_server import LiveServer
from tests.helpers.oidc import ADMIN, basic, bearer, post_state, run_cli
from tests.helpers.oidc_issuer import LocalIssuer, github_claims, gitlab_claims
from tests.helpers.waiting import wait_until_sync

pytestmark = pytest.mark.slow  # starts servers of its own


def lock_call(
    server: LiveServer, method: str, name: str, lock: dict[str, str], headers: dict[str, str]
) -> httpx.Response:
    return httpx.request(method, f"{server.url}/states/{name}/lock", json=lock, headers=headers)


def admin_events(server: LiveServer, state: str) -> list[dict]:
    query = """query($s: String) {
        events(state: $s, first: 20) { edges { node { action actor detail } } } }"""
    answer = httpx.post(
        f"{server.url}/graphql",
        json={"query": query, "variables": {"s": state}},
        auth=ADMIN,
    ).json()
    assert "errors" not in answer, answer
    return [e["node"] for e in answer["data"]["events"]["edges"]]


def test_a_main_job_writes_and_a_feature_job_plans(
    oidc_server: LiveServer, github: LocalIssuer
) -> None:
    name = f"prod/w-{uuid.uuid4().hex[:8]}"
    main = github.token(github_claims("refs/heads/main"))
    feature = github.token(github_claims("refs/heads/feature-x"))
    assert post_state(oidc_server, name, basic(main)).status_code == 200
    assert post_state(oidc_server, name, bearer(main), serial=2).status_code == 200
    refused = post_state(oidc_server, name, basic(feature), serial=3)
    assert refused.status_code == 403, refused.text
    assert "refs/heads/feature-x" in refused.json()["error"]
    read = httpx.get(f"{oidc_server.url}/states/{name}", headers=basic(feature))
    assert read.status_code == 200 and read.json()["serial"] == 2
    outside = post_state(oidc_server, "staging/net", basic(main))
    assert outside.status_code == 403 and "outside its states" in outside.json()["error"]


def test_gitlab_claims_and_the_refusal_of_no_rule(
    oidc_server: LiveServer, gitlab: LocalIssuer, github: LocalIssuer
) -> None:
    name = f"prod/gl-{uuid.uuid4().hex[:8]}"
    assert (
        post_state(oidc_server, name, basic(gitlab.token(gitlab_claims("main")))).status_code == 200
    )
    unprotected = gitlab.token({**gitlab_claims("main"), "ref_protected": "false"})
    refused = post_state(oidc_server, name, basic(unprotected), serial=2)
    assert refused.status_code == 403
    assert "no rule of issuer 'gitlab'" in refused.json()["error"]
    assert refused.json()["detail"]["project_id"] == "41672"
    other = github.token({**github_claims(), "repository_id": "100200300"})
    answer = httpx.get(f"{oidc_server.url}/states/{name}", headers=bearer(other))
    assert answer.status_code == 403 and "repository_id=100200300" in answer.json()["error"]


def test_writes_and_locks_record_the_verified_claims(
    oidc_server: LiveServer, github: LocalIssuer
) -> None:
    name = f"prod/audit-{uuid.uuid4().hex[:8]}"
    jwt = github.token(github_claims(run_id="7700112233"))
    lock = {"ID": str(uuid.uuid4()), "Who": "runner@ci", "Operation": "OperationTypeApply"}
    answer = lock_call(oidc_server, "LOCK", name, lock, basic(jwt))
    assert answer.status_code == 200, answer.text
    assert post_state(oidc_server, name, basic(jwt), lock_id=lock["ID"]).status_code == 200
    answer = lock_call(oidc_server, "UNLOCK", name, lock, basic(jwt))
    assert answer.status_code == 200, answer.text
    trail = admin_events(oidc_server, name)
    assert {e["action"] for e in trail} >= {"lock", "write", "unlock"}
    for event in trail:
        oidc = event["detail"]["oidc"]
        assert event["actor"] == "oidc:github:repo:octo-org/octo-net:ref:refs/heads/main"
        assert oidc["iss"] == github.url and oidc["run_id"] == "7700112233"
        assert oidc["repository_id"] == "892345671" and oidc["ref"] == "refs/heads/main"
        assert oidc["workflow_ref"].endswith("terraform.yml@refs/heads/main")
    page = httpx.get(f"{oidc_server.url}/", auth=ADMIN, headers={"Accept": "text/html"})
    assert page.status_code == 200
    assert 'data-claim="run_id">run_id=7700112233<' in page.text


def test_the_exchanged_token_outlives_the_jwt_and_holds_its_lock(
    oidc_server: LiveServer, github: LocalIssuer, gitlab: LocalIssuer
) -> None:
    name = f"prod/long-{uuid.uuid4().hex[:8]}"
    # valid for about 5 s more (exp is past, within the issuer's 30 s skew)
    jwt = github.token(github_claims(), issued=time.time() - 330, lifetime=305)
    answer = httpx.post(
        f"{oidc_server.url}/auth/oidc/token", json={"token": jwt, "ttlSeconds": 600}
    )
    assert answer.status_code == 200, answer.text
    exchanged = answer.json()
    assert exchanged["role"] == "write" and exchanged["states"] == ["prod/*"]
    assert exchanged["principal"] == "oidc:github:repo:octo-org/octo-net:ref:refs/heads/main"
    lock = {"ID": str(uuid.uuid4()), "Who": "runner@ci", "Operation": "OperationTypeApply"}
    taken = lock_call(oidc_server, "LOCK", name, lock, basic(jwt))
    assert taken.status_code == 200
    wait_until_sync(
        lambda: post_state(oidc_server, name, basic(jwt)).status_code == 401,
        "the JWT expiring",
        within=30,
        interval=0.05,
    )
    # the lock taken with the ID token is the exchanged token's: the same subject
    written = post_state(oidc_server, name, basic(exchanged["token"]), lock_id=lock["ID"])
    assert written.status_code == 200, written.text
    other = gitlab.token(gitlab_claims("main"))
    refused = lock_call(oidc_server, "UNLOCK", name, lock, basic(other))
    assert refused.status_code == 403 and "oidc:github:repo:octo-org" in refused.json()["error"]
    released = httpx.request(
        "UNLOCK",
        f"{oidc_server.url}/states/{name}/lock",
        json=lock,
        headers=bearer(exchanged["token"]),
    )
    assert released.status_code == 200
    forged = exchanged["token"][:-4] + (
        "AAAA" if not exchanged["token"].endswith("AAAA") else "BBBB"
    )
    assert httpx.get(f"{oidc_server.url}/states/{name}", headers=bearer(forged)).status_code == 401


def test_the_exchange_is_capped_at_max_ttl_and_refuses_with_reasons(
    oidc_server: LiveServer, github: LocalIssuer
) -> None:
    jwt = github.token(github_claims())
    answer = httpx.post(f"{oidc_server.url}/auth/oidc/token", headers=bearer(jwt))
    assert answer.status_code == 200
    left = json.loads(json.dumps(answer.json()))["expiresAt"]
    from datetime import datetime

    seconds = datetime.fromisoformat(left).timestamp() - time.time()
    assert 7100 < seconds <= 7200
    refused = httpx.post(f"{oidc_server.url}/auth/oidc/token", json={"token": "eyJx.y.z"})
    assert refused.status_code == 401 and "malformed" in refused.json()["error"]
    assert httpx.post(f"{oidc_server.url}/auth/oidc/token").status_code == 401


def test_a_new_kid_is_used_without_a_restart(oidc_server: LiveServer, github: LocalIssuer) -> None:
    name = f"prod/rot-{uuid.uuid4().hex[:8]}"
    assert post_state(oidc_server, name, basic(github.token(github_claims()))).status_code == 200
    kid = github.rotate()
    rotated = github.token(github_claims())
    assert json.loads(base64.urlsafe_b64decode(rotated.split(".")[0] + "=="))["kid"] == kid
    # at most one refetch per jwksMinRefetchSeconds: it is in within that
    wait_until_sync(
        lambda: post_state(oidc_server, name, basic(rotated), serial=2).status_code == 200,
        "the new key being fetched",
        within=5,
        interval=0.05,
    )


def test_login_prints_a_server_token_the_cli_then_uses(
    oidc_server: LiveServer, github: LocalIssuer, tmp_path: Path
) -> None:
    jwt = github.token(github_claims())
    code, out, err = run_cli(oidc_server, tmp_path, None, "login", "--oidc", jwt, "--ttl", "900")
    assert code == 0, err
    token = out.strip()
    assert token.startswith("igo_") and "(write) on prod/*" in err
    code, out, err = run_cli(oidc_server, tmp_path, token, "whoami")
    assert code == 0 and "oidc:github:repo:octo-org/octo-net:ref:refs/heads/main" in out, err
    code, out, err = run_cli(
        oidc_server,
        tmp_path,
        None,
        "login",
        "--oidc",
        github.token(github_claims(), audience="https://elsewhere.test"),
    )
    assert code == 1 and "wrong audience" in err, err
