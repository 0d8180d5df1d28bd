"""The README's screenshots of the dashboard: a server on a fresh database with sample
data (Terraform states with history, a lock, an IaC scope), driven by headless
Chromium (bench/browser.py: nothing reached but the server).

    uv run python -m bench.screenshots     # writes docs/screenshots/*.png

Uses DATABASE_URL's PostgreSQL server (a database made and dropped), else an
embedded one.
"""

import asyncio
import contextlib
import copy
import json
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import asyncpg
import httpx

from app import db
from app.config import Settings
from bench.__main__ import bench_url
from bench.browser import offline_page
from bench.generate import generate_state
from tests.helpers.live_server import LiveServer, live_server

OUT = Path(__file__).resolve().parent.parent / "docs" / "screenshots"
USER, TOKEN = "admin", "screenshot-token"
AWS = 'provider["registry.terraform.io/hashicorp/aws"]'
NETWORK = "prod/network"
PUBLIC_URL = "https://infragraph.example.com"  # the data sources' backend: this server


def _resource(
    rtype: str,
    name: str,
    depends_on: Sequence[str] = (),
    *,
    keys: list[int] | None = None,
    attributes: dict[str, Any] | None = None,
    sensitive: Sequence[str] = (),
) -> dict[str, Any]:
    def instance(key: int | None) -> dict[str, Any]:
        values = {"id": f"{rtype.removeprefix('aws_')}-{name}-{key or 0}", **(attributes or {})}
        found: dict[str, Any] = {"schema_version": 0, "attributes": values}
        if key is not None:
            found["index_key"] = key
        if depends_on:
            found["dependencies"] = list(depends_on)
        found["sensitive_attributes"] = [[{"type": "get_attr", "value": s}] for s in sensitive]
        return found

    return {
        "mode": "managed",
        "type": rtype,
        "name": name,
        "provider": AWS,
        **({"each": "list"} if keys is not None else {}),
        "instances": [instance(k) for k in keys] if keys is not None else [instance(None)],
    }


def _remote(producer: str, outputs: dict[str, str]) -> dict[str, Any]:
    """A terraform_remote_state data source reading `outputs` of `producer` here."""
    types = ["object", {name: "string" for name in outputs}]
    return {
        "mode": "data",
        "type": "terraform_remote_state",
        "name": producer.split("/")[-1].replace("-", "_"),
        "provider": 'provider["terraform.io/builtin/terraform"]',
        "instances": [
            {
                "schema_version": 0,
                "attributes": {
                    "backend": "http",
                    "config": {
                        "value": {"address": f"{PUBLIC_URL}/states/{producer}"},
                        "type": ["object", {"address": "string"}],
                    },
                    "defaults": None,
                    "outputs": {"value": outputs, "type": types},
                    "workspace": None,
                },
            }
        ],
    }


# states reading each other's outputs: (name, outputs it produces, {producer: outputs read})
ZONE = {"zone_id": "Z0123456789"}
VPC = {"vpc_id": "vpc-main"}
LINKED: list[tuple[str, dict[str, str], dict[str, dict[str, str]]]] = [
    ("prod/dns", ZONE, {}),
    ("prod/app-web", {"url": "https://web.example.com"}, {NETWORK: VPC, "prod/dns": ZONE}),
    ("prod/app-api", {"url": "https://api.example.com"}, {NETWORK: VPC, "prod/dns": ZONE}),
    ("prod/app-worker", {}, {NETWORK: VPC}),
    ("staging/app-web", {}, {"prod/dns": ZONE}),
    (
        "prod/monitoring",
        {},
        {
            "prod/app-web": {"url": "https://web.example.com"},
            "prod/app-api": {"url": "https://api.example.com"},
        },
    ),
]


def linked_state(name: str, produced: dict[str, str], reads: dict[str, dict[str, str]]) -> bytes:
    document = {
        "version": 4,
        "terraform_version": "1.15.5",
        "serial": 1,
        "lineage": f"lineage-{name}",
        "outputs": {k: {"value": v, "type": "string"} for k, v in produced.items()},
        "resources": [_remote(producer, read) for producer, read in reads.items()]
        + [_resource("aws_instance", name.split("/")[-1].replace("-", "_"))],
    }
    return json.dumps(document).encode()


def network_versions() -> list[bytes]:
    """Four versions of a small production network: more web servers, a bigger
    database, then a NAT address."""
    vpc, private, public = "aws_vpc.main", "aws_subnet.private", "aws_subnet.public"
    document: dict[str, Any] = {
        "version": 4,
        "terraform_version": "1.15.5",
        "serial": 1,
        "lineage": "6d1c4e2a-5b7f-4c39-9d0e-2f8a7b1c3e45",
        "outputs": {
            "vpc_id": {"value": "vpc-main", "type": "string"},
            "db_password": {"value": "correct-horse", "type": "string", "sensitive": True},
        },
        "resources": [
            _resource("aws_vpc", "main", attributes={"cidr_block": "10.0.0.0/16"}),
            _resource("aws_subnet", "private", [vpc], keys=[0, 1, 2]),
            _resource("aws_subnet", "public", [vpc], keys=[0, 1, 2]),
            _resource("aws_route_table", "private", [vpc]),
            _resource(
                "aws_route_table_association",
                "private",
                [private, "aws_route_table.private"],
                keys=[0, 1, 2],
            ),
            _resource("aws_security_group", "web", [vpc]),
            _resource("aws_security_group", "db", [vpc, "aws_security_group.web"]),
            _resource("aws_lb", "web", [public, "aws_security_group.web"]),
            _resource("aws_instance", "web", [private, "aws_security_group.web"], keys=[0, 1]),
            _resource(
                "aws_lb_target_group_attachment",
                "web",
                ["aws_instance.web", "aws_lb.web"],
                keys=[0, 1],
            ),
            _resource(
                "aws_db_instance",
                "main",
                [private, "aws_security_group.db"],
                attributes={"instance_class": "db.t3.medium", "password": "correct-horse"},
                sensitive=["password"],
            ),
        ],
    }
    versions = [copy.deepcopy(document)]

    def scale_web(d: dict[str, Any]) -> None:
        for r in d["resources"]:
            if r["name"] == "web" and r["type"] in (
                "aws_instance",
                "aws_lb_target_group_attachment",
            ):
                r["instances"] = _resource(
                    r["type"], "web", r["instances"][0]["dependencies"], keys=[0, 1, 2, 3]
                )["instances"]

    def bigger_database(d: dict[str, Any]) -> None:
        db_instance = next(r for r in d["resources"] if r["type"] == "aws_db_instance")
        db_instance["instances"][0]["attributes"]["instance_class"] = "db.r6g.large"

    def nat(d: dict[str, Any]) -> None:
        d["resources"].append(_resource("aws_eip", "nat", [vpc]))
        d["resources"].append(_resource("aws_nat_gateway", "main", [public, "aws_eip.nat"]))

    for serial, change in enumerate((scale_web, bigger_database, nat), start=2):
        document["serial"] = serial
        change(document)
        versions.append(copy.deepcopy(document))
    return [json.dumps(v).encode() for v in versions]


CRM = "\n".join(
    json.dumps(line)
    for line in [
        {"kind": "header", "system": "crm", "version": 1},
        {"kind": "table", "ref": "contacts", "spec": {"name": "Contacts"}},
        {
            "kind": "column",
            "table": "contacts",
            "ref": "email",
            "spec": {"name": "Email", "type": "text", "unique": True},
        },
        {"kind": "table", "ref": "deals", "spec": {"name": "Deals"}},
        {"kind": "record", "table": "contacts", "key": {"email": "ada@example.com"}},
    ]
)


def _graphql(http: httpx.Client, query: str, **variables: Any) -> dict[str, Any]:
    body = http.post("/graphql", json={"query": query, "variables": variables}).json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


def sample_data(http: httpx.Client) -> None:
    for body in network_versions():
        http.post(f"/states/{NETWORK}", content=body).raise_for_status()
    for i, name in enumerate(("prod/platform", "staging/platform", "dev/sandbox")):
        body = json.dumps(generate_state(300 // (i + 1), seed=i)).encode()
        http.post(f"/states/{name}", content=body).raise_for_status()
    edge = json.loads(network_versions()[0])
    edge["resources"] = [
        _resource("aws_vpc", "edge"),
        _resource("aws_subnet", "edge", ["aws_vpc.edge"], keys=list(range(80))),
        _resource("aws_instance", "edge", ["aws_subnet.edge"], keys=list(range(80))),
        _resource("aws_route_table", "edge", ["aws_vpc.edge"], keys=list(range(3))),
        _resource("aws_eip", "edge", ["aws_instance.edge"], keys=list(range(40))),
        _resource("aws_lb_target_group_attachment", "edge", ["aws_instance.edge"], keys=[0, 1]),
    ]
    http.post("/states/prod/edge", content=json.dumps(edge).encode()).raise_for_status()
    for name, produced, reads in LINKED:
        http.post(f"/states/{name}", content=linked_state(name, produced, reads)).raise_for_status()
    moved = json.loads(linked_state("prod/dns", {"zone_id": "Z9876543210"}, {}))
    moved["serial"] = 2  # a new zone: its readers are stale
    http.post("/states/prod/dns", content=json.dumps(moved).encode()).raise_for_status()
    lock = {"ID": "f3c9a1e0-lock", "Who": "deploy@ci-runner-7", "Operation": "OperationTypeApply"}
    http.request("LOCK", "/states/staging/platform", json=lock).raise_for_status()
    _graphql(http, 'mutation { createScope(slug: "sales", name: "Sales") { id } }')
    plan = _graphql(
        http, 'mutation($d: String!) { plan(scope: "sales", document: $d) { hash } }', d=CRM
    )
    _graphql(
        http,
        "mutation($d: String!, $h: String!) "
        '{ apply(scope: "sales", document: $d, hash: $h) { stateName } }',
        d=CRM,
        h=plan["plan"]["hash"],
    )


GRAPHIQL_QUERY = """query State($name: String!) {
  state(name: $name) {
    name
    currentVersion { serial resourceCount }
  }
}
"""
PAGES = [
    ("overview", "/", {}),
    ("state", "/ui/state", {"name": NETWORK, "from": 2, "to": 3}),
    ("resource", "/ui/resource", {"state": NETWORK, "address": "aws_vpc.main"}),
    ("radius", "/ui/resource", {"state": "prod/edge", "address": "aws_vpc.edge", "depth": 3}),
    ("inventory", "/ui/inventory", {"q": '{"cidr_block": "10.0.0.0/16"}'}),
    ("iac", "/ui/iac", {}),
    ("map", "/ui/map", {}),
    ("graphiql", "/graphql", {"query": GRAPHIQL_QUERY, "variables": '{"name": "prod/network"}'}),
]


async def shoot(server: LiveServer) -> list[Path]:
    OUT.mkdir(parents=True, exist_ok=True)
    written = []
    async with offline_page(server.url, (USER, TOKEN), width=1280, height=860) as browser:
        for name, path, params in PAGES:
            query = f"?{urlencode(params)}" if params else ""
            await browser.page.goto(f"{server.url}{path}{query}")
            if name in ("overview", "map"):
                await browser.page.wait_for_selector("#live.on")
            if name == "graphiql":  # served by the server itself; the answer to its query
                await browser.page.wait_for_selector(".graphiql-container", timeout=30_000)
                await browser.page.click(".graphiql-execute-button")
                await browser.page.wait_for_selector('.graphiql-response :text("currentVersion")')
                await browser.page.get_by_role("button", name="Show Documentation Explorer").click()
                await browser.page.wait_for_selector(".graphiql-doc-explorer")
            target = OUT / f"{name}.png"
            await browser.page.screenshot(path=str(target))
            written.append(target)
    assert browser.blocked == [], browser.blocked
    return written


@contextlib.asynccontextmanager
async def fresh_database() -> AsyncIterator[str]:
    admin_url = db.database_url(Settings.from_env())
    name = f"infragraph_shots_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(admin_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield bench_url(admin_url, name)
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@contextlib.contextmanager
def sample_server(url: str) -> Iterator[LiveServer]:
    env = {"INFRAGRAPH_API_TOKENS": f"{USER}:{TOKEN}", "INFRAGRAPH_PUBLIC_URLS": PUBLIC_URL}
    with live_server(url, env, timeout=90) as server:
        with httpx.Client(
            base_url=server.url,
            auth=(USER, TOKEN),
            timeout=60,
            headers={"Content-Type": "application/json"},
        ) as http:
            sample_data(http)
        yield server


async def main() -> None:
    async with fresh_database() as url:
        with sample_server(url) as server:
            for path in await shoot(server):
                print(path)


if __name__ == "__main__":
    asyncio.run(main())
