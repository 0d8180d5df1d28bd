"""A GET reduced to the outputs is a state Terraform reads: every corpus state that has
outputs, with secrets planted in a sensitive output and in every resource instance, is
read by a `read` token through terraform_remote_state (real Terraform), which finds
every non-sensitive output and nothing else; the bytes served hold no planted secret."""

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import asyncpg
import httpx
import pytest

from tests.helpers.corpus import corpus_files
from tests.helpers.live_server import LiveServer
from tests.helpers.terraform import ADMIN_PASSWORD

pytestmark = pytest.mark.slow

READER = "corpus-reader"
CREATE = """mutation($name: String!) {
  createToken(name: $name, role: READ, states: ["corpus/*"]) { secret } }"""


def _planted(document: dict[str, Any], index: int) -> tuple[dict[str, Any], list[str]]:
    """The document with a secret in a sensitive output and in every instance."""
    secrets = [f"PLANTED-output-{index}-{uuid.uuid4().hex}"]
    outputs = dict(document["outputs"])
    outputs["planted"] = {"value": secrets[0], "type": "string", "sensitive": True}
    for resource in document.get("resources") or ():
        for instance in resource.get("instances") or ():
            secret = f"PLANTED-attribute-{index}-{uuid.uuid4().hex}"
            for key in ("attributes", "attributes_flat"):
                if isinstance(instance.get(key), dict):
                    instance[key] = {**instance[key], "planted": secret}
                    secrets.append(secret)
    return {**document, "outputs": outputs}, secrets


@pytest.fixture(scope="module")
def reader(server: LiveServer, database_url: str) -> Iterator[str]:
    """A read token on corpus/* (its secret); gone after the module."""
    response = httpx.post(
        f"{server.url}/graphql",
        json={"query": CREATE, "variables": {"name": READER}},
        auth=("boot", ADMIN_PASSWORD),
    )
    yield response.json()["data"]["createToken"]["secret"]

    async def forget() -> None:
        conn = await asyncpg.connect(database_url)
        try:
            await conn.execute("DELETE FROM api_tokens WHERE name = $1", READER)
        finally:
            await conn.close()

    asyncio.run(forget())


async def test_terraform_reads_every_public_output_of_every_corpus_state(
    server: LiveServer, reader: str, new_project
) -> None:
    admin = httpx.AsyncClient(base_url=server.url, auth=("boot", ADMIN_PASSWORD), timeout=60)
    consumer = httpx.AsyncClient(base_url=server.url, auth=(READER, reader), timeout=60)
    expected: dict[str, dict[str, Any]] = {}
    addresses: dict[str, str] = {}
    planted: list[str] = []
    async with admin, consumer:
        for index, path in enumerate(corpus_files()):
            original = json.loads(path.read_bytes())
            if not original.get("outputs"):
                continue
            document, secrets = _planted(original, index)
            planted += secrets
            name = f"corpus/{index}"
            written = await admin.post(
                f"/states/{name}",
                content=json.dumps(document),
                headers={"Content-Type": "application/json"},
            )
            assert written.is_success, (path.name, written.text)
            answered = await consumer.get(f"/states/{name}")
            assert answered.status_code == 200, answered.text
            assert answered.headers["X-Infragraph-Reduced"] == "outputs"
            reduced = answered.json()
            assert reduced["version"] == 4 and reduced["resources"] == [], path.name
            assert (reduced["serial"], reduced["lineage"]) == (
                original["serial"],
                original["lineage"],
            )
            public = {k: v for k, v in original["outputs"].items() if not v.get("sensitive")}
            assert reduced["outputs"] == public, path.name
            assert not any(secret in answered.text for secret in planted), path.name
            expected[f"s{index}"] = {k: v["value"] for k, v in public.items()}
            addresses[f"s{index}"] = f"{server.url}/states/{name}"
    assert len(expected) >= 30  # the corpus's states with outputs

    terraform = new_project("remote_many")
    variables = {"addresses": addresses, "username": READER, "password": reader}
    (terraform.workdir / "terraform.tfvars.json").write_text(json.dumps(variables))
    (await terraform.run("init")).check()
    (await terraform.run("apply", "-auto-approve")).check()
    shown = (await terraform.run("output", "-json", "all")).check()
    assert json.loads(shown.stdout) == expected
    assert not any(secret in shown.stdout for secret in planted)
