"""An issuer's keys, held by kid: a token with a kid not held refetches them, at most
once per jwksMinRefetchSeconds whatever kids callers make up."""

import asyncio

import pytest

from app.errors import Unauthenticated
from app.oidc.config import parse
from app.oidc.verify import Verifier
from tests.helpers.oidc_issuer import LocalIssuer, github_claims, oidc_config

INTERVAL_S = 3.0  # long enough for ten refusals on a loaded machine


async def test_made_up_kids_refetch_at_most_once_per_interval() -> None:
    with LocalIssuer() as issuer:
        config = oidc_config({"github": issuer.url}, jwksMinRefetchSeconds=INTERVAL_S)
        verifier = Verifier(parse(config))
        try:
            made_up = [issuer.token(github_claims(), kid=f"made-up-{i}") for i in range(20)]
            await verifier.verify(issuer.token(github_claims()))  # the keys fetched
            fetched = issuer.hits  # discovery and JWKS
            assert fetched == 2
            for token in made_up[:10]:  # within the interval: none refetches
                with pytest.raises(Unauthenticated, match="is not among"):
                    await verifier.verify(token)
            assert issuer.hits == fetched
            await asyncio.sleep(INTERVAL_S + 0.1)
            for token in made_up[10:]:  # past it: one refetch for all of them
                with pytest.raises(Unauthenticated, match="is not among"):
                    await verifier.verify(token)
            assert issuer.hits == fetched + 2
            # a real new key is found by the next refetch, with no restart
            issuer.rotate()
            await asyncio.sleep(INTERVAL_S + 0.1)
            found = await verifier.verify(issuer.token(github_claims()))
            assert found.principal.name.startswith("oidc:github:")
        finally:
            await verifier.close()


async def test_a_key_is_used_by_its_own_algorithm_only() -> None:
    """A token naming another algorithm than its key's (both allowed) is refused: the
    token does not choose how the key is used."""
    with LocalIssuer() as issuer:  # its keys are published as RS256
        config = oidc_config({"github": issuer.url}, algorithms=["RS256", "RS384"])
        verifier = Verifier(parse(config))
        try:
            assert await verifier.verify(issuer.token(github_claims()))
            other = issuer.token(github_claims(), algorithm="RS384")
            with pytest.raises(Unauthenticated, match="the key is for RS256, the token says RS384"):
                await verifier.verify(other)
        finally:
            await verifier.close()
