"""Every refusal of an OIDC token says why, with 401 or 403 (503 with Retry-After when
the issuer's keys cannot be fetched), never a 500: through the HTTP backend, GraphQL,
the websocket (its connection_init, and its handshake's header) and the dashboard."""

import asyncio
import base64
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import jwt
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.helpers.graphql_ws import connected, ws_url
from tests.helpers.live_server import LiveServer, live_server
from tests.helpers.oidc import basic, oidc_server_env, post_state
from tests.helpers.oidc_issuer import AUDIENCE, LocalIssuer, github_claims, new_key, oidc_config
from tests.helpers.waiting import wait_until_sync

pytestmark = pytest.mark.slow  # starts servers of its own

SKEW = 30  # the issuers' clockSkewSeconds (tests.helpers.oidc_issuer.oidc_config)


@dataclass(frozen=True)
class Case:
    make: Callable[[LocalIssuer, LocalIssuer], str]
    status: int
    reason: str


def _resigned(github: LocalIssuer, gitlab: LocalIssuer) -> str:
    """A token of the GitHub issuer, its signature replaced by a stranger's key's."""
    _, stranger = new_key()
    return github.token(github_claims(), key=stranger)


def _claims(github: LocalIssuer) -> dict[str, object]:
    """A valid token's claims, to be signed otherwise than the issuer signs."""
    return {
        "iss": github.url,
        "aud": AUDIENCE,
        "exp": int(time.time()) + 300,
        "iat": int(time.time()),
        **github_claims(),
    }


def _none(github: LocalIssuer, gitlab: LocalIssuer) -> str:
    return jwt.encode(_claims(github), None, algorithm="none")


def _hmac(github: LocalIssuer, gitlab: LocalIssuer) -> str:
    return jwt.encode(
        _claims(github),
        "a-shared-secret-of-thirty-two-bytes!",
        algorithm="HS256",
        headers={"kid": github.keys[-1][0]},
    )


def _padded(size: int) -> Callable[[LocalIssuer, LocalIssuer], str]:
    def make(github: LocalIssuer, gitlab: LocalIssuer) -> str:
        return github.token({**github_claims(), "padding": "x" * size})

    return make


CASES = {
    "unknown issuer": Case(
        lambda gh, gl: gh.token(github_claims(), issuer="https://issuer.invalid"),
        401,
        "is not trusted",
    ),
    "bad signature": Case(_resigned, 401, "bad signature"),
    "another issuer's key": Case(
        lambda gh, gl: gh.token(github_claims(), key=gl.keys[-1][1], kid=gl.keys[-1][0]),
        401,
        "is not among",
    ),
    "alg none": Case(_none, 401, "algorithm 'none' refused"),
    "HMAC": Case(_hmac, 401, "algorithm 'HS256' refused"),
    "expired 1 s beyond the skew": Case(
        lambda gh, gl: gh.token(github_claims(), issued=time.time() - 300 - SKEW - 1, lifetime=300),
        401,
        "expired",
    ),
    "not yet valid": Case(
        lambda gh, gl: gh.token(github_claims(), issued=time.time() + SKEW + 60),
        401,
        "not yet valid",
    ),
    "wrong audience": Case(
        lambda gh, gl: gh.token(github_claims(), audience="https://elsewhere.test"),
        401,
        "wrong audience",
    ),
    "iss and aud swapped": Case(
        lambda gh, gl: gh.token(github_claims(), issuer=AUDIENCE, audience=gh.url),
        401,
        "is not trusted",
    ),
    "unknown kid after refetch": Case(
        lambda gh, gl: gh.token(github_claims(), kid="kid-nobody-published"), 401, "is not among"
    ),
    "malformed": Case(lambda gh, gl: "eyJhbGciOiJSUzI1NiJ9.%%%.x", 401, "malformed"),
    # past the other headers' 64 KiB: the Authorization header has its own allowance
    "100 KB": Case(_padded(100_000), 401, "over 8192 bytes"),
    "20 KB": Case(_padded(20_000), 401, "over 8192 bytes"),
    "no rule": Case(
        lambda gh, gl: gh.token({**github_claims(), "repository_id": "100200300"}),
        403,
        "no rule of issuer 'github'",
    ),
}


def _basic(token: str) -> str:
    return "Basic " + base64.b64encode(f"oidc:{token}".encode()).decode()


def _http_refusal(server: LiveServer, interface: str, token: str) -> tuple[int, str, httpx.Headers]:
    if interface == "backend":
        answer = httpx.get(
            f"{server.url}/states/prod/net", headers={"Authorization": _basic(token)}
        )
    elif interface == "graphql":
        answer = httpx.post(
            f"{server.url}/graphql",
            json={"query": "{ states(first: 1) { edges { node { name } } } }"},
            headers={"Authorization": f"Bearer {token}"},
        )
    else:
        answer = httpx.get(
            f"{server.url}/ui/inventory",
            headers={"Authorization": f"Bearer {token}", "Accept": "text/html"},
        )
    body = answer.json() if "json" in answer.headers.get("content-type", "") else None
    return answer.status_code, body["error"] if body else answer.text, answer.headers


async def _websocket_refusal(server: LiveServer, token: str) -> str:
    async with connected(server.url, {"authorization": f"Bearer {token}"}) as ws:
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 30)
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 4403
    return closed.value.rcvd.reason


async def _websocket_header_refusal(server: LiveServer, token: str) -> tuple[int, str]:
    """A handshake carrying the token as its header: refused as HTTP would be."""
    headers = {"Authorization": f"Bearer {token}"}
    with pytest.raises(InvalidStatus) as refused:
        async with connect(ws_url(server.url), additional_headers=headers):
            pass
    response = refused.value.response
    return response.status_code, response.body.decode()


INTERFACES = ["backend", "graphql", "dashboard", "websocket", "websocket header"]


@pytest.mark.parametrize("interface", INTERFACES)
@pytest.mark.parametrize("case", CASES, ids=list(CASES))
async def test_refused_with_the_reason(
    oidc_server: LiveServer, github: LocalIssuer, gitlab: LocalIssuer, case: str, interface: str
) -> None:
    refusal = CASES[case]
    token = refusal.make(github, gitlab)
    if interface == "websocket":
        reason = await _websocket_refusal(oidc_server, token)
        # a close frame's reason is cut at 123 bytes: its start says why
        assert refusal.reason[:40] in reason, reason
        return
    if interface == "websocket header":
        status, reason = await _websocket_header_refusal(oidc_server, token)
        assert (status, refusal.reason in reason) == (refusal.status, True), reason
        return
    status, reason, _ = await asyncio.to_thread(_http_refusal, oidc_server, interface, token)
    assert (status, refusal.reason in reason) == (refusal.status, True), reason


def test_a_100_kb_token_in_a_body_is_refused_by_its_size(
    oidc_server: LiveServer, github: LocalIssuer, gitlab: LocalIssuer
) -> None:
    token = CASES["100 KB"].make(github, gitlab)
    answer = httpx.post(f"{oidc_server.url}/auth/oidc/token", json={"token": token})
    assert answer.status_code == 401 and "over 8192 bytes" in answer.json()["error"]


@pytest.fixture
def unreachable(database_url: str, tmp_path: Path) -> Iterator[tuple[LiveServer, LocalIssuer]]:
    """A server trusting an issuer that answers 503 until the test says otherwise, its
    keys kept for half a second."""
    with LocalIssuer() as issuer:
        issuer.down = True
        config = oidc_config({"github": issuer.url}, jwksCacheSeconds=0.5)
        with live_server(database_url, oidc_server_env(tmp_path / "oidc.json", config)) as server:
            yield server, issuer
            log = server.log()
            assert "Traceback" not in log and '" 500 ' not in log, log


def test_unreachable_keys_are_503_with_retry_after_and_held_keys_still_serve(
    unreachable: tuple[LiveServer, LocalIssuer],
) -> None:
    server, issuer = unreachable
    token = issuer.token(github_claims())
    for interface in ["backend", "graphql", "dashboard"]:
        status, reason, headers = _http_refusal(server, interface, token)
        assert status == 503 and "cannot be fetched" in reason, reason
        assert int(headers["retry-after"]) > 0
    assert "cannot be fetched" in asyncio.run(_websocket_refusal(server, token))
    issuer.down = False
    name = "prod/held"
    assert post_state(server, name, basic(token)).status_code == 200
    issuer.down = True
    seen = issuer.hits

    def fresh() -> str:
        return issuer.token(github_claims())

    def refresh_tried() -> bool:
        if issuer.hits != seen:
            return True
        # a token not seen before each time: a verified one is kept, its key not looked up
        answer = httpx.get(f"{server.url}/states/{name}", headers=basic(fresh()))
        assert answer.status_code == 200, answer.text
        return False

    wait_until_sync(
        refresh_tried, "the server to try to refresh its keys (and fail)", within=30, interval=0.05
    )
    answer = httpx.get(f"{server.url}/states/{name}", headers=basic(fresh()))
    assert answer.status_code == 200, answer.text  # the keys held still verify
    issuer.rotate()
    unknown = issuer.token(github_claims())
    answer = httpx.get(f"{server.url}/states/{name}", headers=basic(unknown))
    assert answer.status_code == 503 and "is not held" in answer.json()["error"], answer.text
    assert answer.headers["retry-after"] == "30"
