"""The OIDC case: what verifying a CI ID token whose key is cached adds to a request.

Judged on the verification itself (app.oidc.verify.Verifier.verify, in this process,
the issuer's keys held): of a token not seen before (its signature and claims checked,
a CI job's first request), and of a token already seen (each request after its first),
both <= 0.2 ms. The same GET over HTTP with the JWT and with a bootstrap token, on a
second server trusting a local issuer, is reported beside it (noisier: it carries the
network and the server)."""

import statistics
import time
from pathlib import Path
from tempfile import TemporaryDirectory

import httpx

from app.oidc.config import parse
from app.oidc.verify import Verifier
from bench.cases import TINY, BenchError, Env
from bench.harness import Result, alternate
from tests.helpers.backend import tf_state
from tests.helpers.live_server import live_server
from tests.helpers.oidc_issuer import LocalIssuer, github_claims, oidc_config

STATE = "prod/bench-oidc"
BOOT = "bench-boot-secret"


async def _verify_seconds(issuer: LocalIssuer, token: str, count: int) -> tuple[float, float]:
    """Seconds per verification of the same token again (what each request of a CI job
    costs) and of a token not seen before (its first request), the keys held."""
    verifier = Verifier(parse(oidc_config({"github": issuer.url})))
    fresh = [issuer.token(github_claims(run_id=str(i)), lifetime=3600) for i in range(count)]
    try:
        await verifier.verify(token)  # fetches the keys: untimed
        again, first = [], []
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(count):
                await verifier.verify(token)
            again.append((time.perf_counter() - started) / count)
        for each in fresh:
            started = time.perf_counter()
            await verifier.verify(each)
            first.append(time.perf_counter() - started)
        return statistics.median(again), statistics.median(first)
    finally:
        await verifier.close()


async def verify_case(env: Env) -> Result:
    count = 20 if env.size is TINY else 300
    requests = 20 if env.size is TINY else 500
    runs = 3 if env.size is TINY else 7
    with LocalIssuer() as issuer, TemporaryDirectory() as tmp:
        token = issuer.token(github_claims(), lifetime=3600)
        verify_s, first_s = await _verify_seconds(issuer, token, count)
        config = Path(tmp) / "oidc.json"
        config.write_text(oidc_config({"github": issuer.url}))
        settings = {"INFRAGRAPH_API_TOKENS": f"boot:{BOOT}", "INFRAGRAPH_OIDC_CONFIG": str(config)}
        with live_server(env.database_url, settings, timeout=60) as server:
            async with httpx.AsyncClient(base_url=server.url) as http:
                jwt_headers = {"Authorization": f"Bearer {token}"}
                boot_headers = {"Authorization": f"Bearer {BOOT}"}
                written = await http.post(
                    f"/states/{STATE}",
                    content=tf_state(1),
                    headers={**jwt_headers, "Content-Type": "application/json"},
                )
                if written.status_code != 200:
                    raise BenchError(f"the JWT did not write: {written.text}")

                async def gets(headers: dict[str, str]) -> None:
                    for _ in range(requests):
                        answer = await http.get(f"/states/{STATE}", headers=headers)
                        if answer.status_code != 200:
                            raise BenchError(f"GET answered {answer.status_code}")

                async def with_jwt() -> None:
                    await gets(jwt_headers)

                async def with_token() -> None:
                    await gets(boot_headers)

                cand, base = await alternate(with_jwt, with_token, runs)
    assert base is not None
    added_http = (cand - base) / requests
    return Result(
        "oidc, cached-key verify",
        f"GET a state x{requests} with an OIDC ID token (RS256, key cached)",
        "the same GETs with a bootstrap token",
        cand,
        base,
        "verifying adds <= 0.2 ms per request",
        first_s <= 0.0002 and verify_s <= 0.0002,
        runs,
        {
            "verify_ms": round(verify_s * 1000, 4),
            "first_verify_ms": round(first_s * 1000, 4),
            "added_http_ms": round(added_http * 1000, 4),
        },
    )


OIDC_GROUP = [verify_case]
