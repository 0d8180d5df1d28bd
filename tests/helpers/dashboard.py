"""The dashboard's pages as a browser asks for them, and what they show: a hub of a
VPC, and tables an IaC apply manages; what the browser tests measure (BOXES)."""

import json
from typing import Any

import asyncpg
import httpx

from app.iac import service
from tests.helpers.states import resource, state

HTML = {"Accept": "text/html,application/xhtml+xml"}

# every element whose box must not cross another's (a parent contains its children)
BOXES = """() => {
  const boxes = [];
  const measured = 'main h1, main h2, main form, main table, main td, main .picture, main .totals';
  for (const el of document.querySelectorAll(measured)) {
    const r = el.getBoundingClientRect();
    if (r.width && r.height) boxes.push({
      name: el.tagName + '#' + el.id + ' ' + el.textContent.slice(0, 40),
      left: r.left, right: r.right, top: r.top, bottom: r.bottom, el});
  }
  const crossing = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], b = boxes[j];
    if (a.el.contains(b.el) || b.el.contains(a.el)) continue;
    const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
    const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    if (w > 0.5 && h > 0.5) crossing.push([a.name, b.name]);
  }
  const spilling = [...document.querySelectorAll('main td')].filter(
    td => td.scrollWidth > td.clientWidth + 1).map(td => td.textContent.slice(0, 40));
  return {count: boxes.length, crossing, spilling};
}"""


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
