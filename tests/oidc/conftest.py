"""A live server trusting two local issuers (GitHub-like and GitLab-like), with a
bootstrap admin."""

from collections.abc import Iterator

import pytest

from tests.helpers.live_server import LiveServer, live_server
from tests.helpers.oidc import oidc_server_env
from tests.helpers.oidc_issuer import LocalIssuer, issuers, oidc_config


@pytest.fixture(scope="session")
def local_issuers() -> Iterator[tuple[LocalIssuer, LocalIssuer]]:
    with issuers() as both:
        yield both


@pytest.fixture(scope="session")
def github(local_issuers: tuple[LocalIssuer, LocalIssuer]) -> LocalIssuer:
    return local_issuers[0]


@pytest.fixture(scope="session")
def gitlab(local_issuers: tuple[LocalIssuer, LocalIssuer]) -> LocalIssuer:
    return local_issuers[1]


@pytest.fixture(scope="session")
def oidc_server(
    database_url: str,
    github: LocalIssuer,
    gitlab: LocalIssuer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[LiveServer]:
    config = oidc_config({"github": github.url, "gitlab": gitlab.url})
    env = oidc_server_env(tmp_path_factory.mktemp("oidc") / "oidc.json", config)
    with live_server(database_url, env) as server:
        yield server
        assert not server.server_errors(), server.log()
