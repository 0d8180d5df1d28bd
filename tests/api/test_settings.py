"""Settings read from the environment reach what they limit: the document size limit is
Settings.max_document_bytes, for GraphQL as for the CLI (no other reader of the variable)."""

import httpx
import pytest

from app.config import MIB, Settings
from app.server import create_app
from tests.helpers.graphql import post

PLAN = 'mutation($d: String!) { plan(scope: "crm", document: $d) { hash } }'
DOCUMENT = '{"kind": "header", "system": "crm", "version": 1}\n' + "\n" * 200


def test_sizes_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("INFRAGRAPH_MAX_DOCUMENT_BYTES", raising=False)
    assert Settings.from_env().max_document_bytes == 64 * MIB
    monkeypatch.setenv("INFRAGRAPH_MAX_DOCUMENT_BYTES", "20")
    assert Settings.from_env().max_document_bytes == 20
    for bad in ("lots", "0", "-5"):
        monkeypatch.setenv("INFRAGRAPH_MAX_DOCUMENT_BYTES", bad)
        with pytest.raises(ValueError, match="must be a positive integer"):
            Settings.from_env()


async def test_a_plan_over_the_document_limit_is_refused(database_url: str, conn) -> None:
    app = create_app(Settings(max_document_bytes=100), database_url=database_url)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://t",
            headers={"Content-Type": "application/json"},
        ) as client,
    ):
        [error] = (await post(client, PLAN, {"d": DOCUMENT}))["errors"]
    assert error["extensions"]["code"] == "BAD_INPUT"
    assert f"document is {len(DOCUMENT)} bytes, over the 100 limit" in error["message"]
