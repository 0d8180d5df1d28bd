"""A local OIDC issuer for tests: keys made here, discovery and JWKS served on loopback.

    with LocalIssuer() as issuer:
        jwt = issuer.token(github_claims(ref="refs/heads/main"), audience=AUDIENCE)
        issuer.rotate()      # a new kid: tokens signed from now on use it
        issuer.down = True   # discovery and JWKS answer 503 (the issuer unreachable)

Claim sets are shaped as GitHub Actions and GitLab CI document their ID tokens (ids
are strings there, as they are here).
"""

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

AUDIENCE = "https://infragraph.test"
GITHUB_REPOSITORY_ID = "892345671"
GITLAB_PROJECT_ID = "41672"


def new_key() -> tuple[str, rsa.RSAPrivateKey]:
    return uuid.uuid4().hex[:16], rsa.generate_private_key(public_exponent=65537, key_size=2048)


def github_claims(ref: str = "refs/heads/main", run_id: str = "9876543210") -> dict[str, Any]:
    repository = "octo-org/octo-net"
    branch = ref.removeprefix("refs/heads/")
    return {
        "sub": f"repo:{repository}:ref:{ref}",
        "repository": repository,
        "repository_id": GITHUB_REPOSITORY_ID,
        "repository_owner": "octo-org",
        "repository_owner_id": "65432198",
        "repository_visibility": "private",
        "actor": "octocat",
        "actor_id": "583231",
        "ref": ref,
        "ref_type": "branch",
        "ref_protected": "true" if branch == "main" else "false",
        "sha": "e4e0f1e0c3a5b2d1f1e5c9a3b7d6f0a1c2b3d4e5",
        "workflow": "terraform",
        "workflow_ref": f"{repository}/.github/workflows/terraform.yml@{ref}",
        "workflow_sha": "e4e0f1e0c3a5b2d1f1e5c9a3b7d6f0a1c2b3d4e5",
        "job_workflow_ref": f"{repository}/.github/workflows/terraform.yml@{ref}",
        "job_workflow_sha": "e4e0f1e0c3a5b2d1f1e5c9a3b7d6f0a1c2b3d4e5",
        "event_name": "push",
        "run_id": run_id,
        "run_number": "42",
        "run_attempt": "1",
        "runner_environment": "github-hosted",
    }


def gitlab_claims(ref: str = "main", pipeline_id: str = "1203954822") -> dict[str, Any]:
    project = "infra-group/network"
    return {
        "sub": f"project_path:{project}:ref_type:branch:ref:{ref}",
        "namespace_id": "72018",
        "namespace_path": "infra-group",
        "project_id": GITLAB_PROJECT_ID,
        "project_path": project,
        "user_id": "3107",
        "user_login": "alice",
        "user_email": "alice@example.com",
        "user_access_level": "maintainer",
        "pipeline_id": pipeline_id,
        "pipeline_source": "push",
        "job_id": "6571234098",
        "ref": ref,
        "ref_type": "branch",
        "ref_path": f"refs/heads/{ref}",
        "ref_protected": "true" if ref == "main" else "false",
        "runner_id": "12270831",
        "runner_environment": "gitlab-hosted",
        "sha": "714a629c0b401fdce83e847fc9589983fc6f46bc",
        "project_visibility": "private",
        "ci_config_ref_uri": f"gitlab.com/{project}//.gitlab-ci.yml@refs/heads/{ref}",
        "ci_config_sha": "714a629c0b401fdce83e847fc9589983fc6f46bc",
    }


class LocalIssuer:
    def __init__(self) -> None:
        self.keys: list[tuple[str, rsa.RSAPrivateKey]] = [new_key()]
        self.down = False
        self.hits = 0  # discovery and JWKS requests answered (or refused while down)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "LocalIssuer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def rotate(self) -> str:
        """A new signing key (published next to the old one); its kid."""
        self.keys.append(new_key())
        return self.keys[-1][0]

    def jwks(self) -> dict[str, Any]:
        keys = []
        for kid, key in self.keys:
            public = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
            keys.append({**public, "kid": kid, "use": "sig", "alg": "RS256"})
        return {"keys": keys}

    def token(
        self,
        claims: dict[str, Any],
        *,
        audience: str = AUDIENCE,
        issuer: str | None = None,
        lifetime: float = 300.0,
        issued: float | None = None,
        key: rsa.RSAPrivateKey | None = None,
        kid: str | None = None,
        algorithm: str = "RS256",
    ) -> str:
        now = time.time() if issued is None else issued
        payload = {
            "iss": issuer or self.url,
            "aud": audience,
            "jti": uuid.uuid4().hex,
            "iat": int(now),
            "nbf": int(now),
            "exp": int(now + lifetime),
            **claims,
        }
        used_kid, used_key = self.keys[-1]
        return jwt.encode(
            payload, key or used_key, algorithm=algorithm, headers={"kid": kid or used_kid}
        )

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                issuer.hits += 1
                if issuer.down:
                    self._answer(503, {"error": "down"})
                elif self.path == "/.well-known/openid-configuration":
                    self._answer(200, {"issuer": issuer.url, "jwks_uri": f"{issuer.url}/jwks"})
                elif self.path == "/jwks":
                    self._answer(200, issuer.jwks())
                else:
                    self._answer(404, {})

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def oidc_config(issuers: dict[str, str], **settings: Any) -> str:
    """A config (JSON) trusting each issuer URL of `issuers` (name: URL) with the rules
    the tests use: GitHub's main branch writes prod/*, any of its refs reads prod/*;
    GitLab's protected main writes prod/*."""
    rules = {
        "github": [
            {
                "match": {"repository_id": GITHUB_REPOSITORY_ID, "ref": "refs/heads/main"},
                "role": "write",
                "states": ["prod/*"],
            },
            {
                "match": {"repository_id": GITHUB_REPOSITORY_ID},
                "role": "plan",
                "states": ["prod/*"],
            },
        ],
        "gitlab": [
            {
                "match": {"project_id": GITLAB_PROJECT_ID, "ref": "main", "ref_protected": "true"},
                "role": "write",
                "states": ["prod/*"],
            },
        ],
    }
    return json.dumps(
        {
            "issuers": [
                {
                    "name": name,
                    "issuer": url,
                    "audience": AUDIENCE,
                    "algorithms": ["RS256", "ES256"],
                    "clockSkewSeconds": 30,
                    "jwksMinRefetchSeconds": 0.2,
                    **settings,
                    "rules": rules[name],
                }
                for name, url in issuers.items()
            ]
        }
    )


@contextlib.contextmanager
def issuers() -> Iterator[tuple[LocalIssuer, LocalIssuer]]:
    """A GitHub-like and a GitLab-like issuer."""
    with LocalIssuer() as github, LocalIssuer() as gitlab:
        yield github, gitlab
