"""The dashboard's pages as a browser asks for them, and what they show: a hub of a
VPC, and tables an IaC apply manages."""

import json
from typing import Any

import asyncpg
import httpx

from app.iac import service
from tests.graph.states import resource, state

HTML = {"Accept": "text/html,application/xhtml+xml"}


async def page(client: httpx.AsyncClient, path: str, params: dict[str, Any] | None = None) -> str:
    response = await client.get(path, params=params, headers=HTML)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/html")
    return response.text


def hub(spokes: int, *, serial: int = 1) -> bytes:
    """A VPC with `spokes` subnets, each with an instance: a radius of 2 * spokes."""
    return state(
        [
            resource("aws_vpc", "main", attributes={"id": "vpc-1"}),
            resource("aws_subnet", "s", keys=list(range(spokes)), depends_on=["aws_vpc.main"]),
            resource("aws_instance", "web", keys=list(range(spokes)), depends_on=["aws_subnet.s"]),
        ],
        serial=serial,
    )


async def apply_tables(
    conn: asyncpg.Connection, scope: str, system: str, tables: list[str]
) -> None:
    """An IaC apply by "deployer" of `system` managing `tables`."""
    lines = [{"kind": "header", "system": system, "version": 1}] + [
        {"kind": "table", "ref": ref, "spec": {"name": ref.title()}} for ref in tables
    ]
    document = "\n".join(json.dumps(line) for line in lines).encode()
    planned = await service.plan(conn, scope, document)
    await service.apply(conn, scope, document, planned.hash, actor="deployer")
