"""The dashboard's pages, rendered in-process from real states: each shows its data,
sensitive values masked, a fixed number of SQL statements whatever it holds."""

import html as markup
import json
import re
from typing import Any

import asyncpg

from app.access import Principal, Role
from app.catalog.scopes import create_scope
from app.dashboard.pages import DRAWN_PER_LAYER, MASK, TIMELINE
from app.graph import locks
from app.graph.write.version import write_version
from tests.helpers.dashboard import HTML, apply_tables, hub, page
from tests.helpers.states import PASSWORD, grouped_radius, resource, shared_history, state


async def test_root_is_the_overview_for_a_browser_and_404_for_anything_else(client) -> None:
    response = await client.get("/")
    assert response.status_code == 404
    assert response.json()["code"] == "NOT_FOUND"
    assert "<h1>States</h1>" in await page(client, "/")


async def test_overview_lists_states_with_serial_writer_lock_totals_and_events(
    client, conn: asyncpg.Connection
) -> None:
    for serial, body in enumerate(shared_history()[:3], start=1):
        await write_version(conn, "team/net", body, actor="ci")
        assert serial
    await write_version(conn, "team/app", hub(2), actor="alice")
    info = {"ID": "lock-1", "Who": "bob@laptop", "Operation": "OperationTypeApply"}
    await locks.lock(conn, "team/app", info, who=Principal("bob", Role.WRITE))
    html = await page(client, "/")
    rows = dict(re.findall(r'<tr data-state="([^"]+)">(.*?)</tr>', html, re.S))
    assert set(rows) == {"team/net", "team/app"}
    assert re.search(r'class="num serial">3<', rows["team/net"])
    assert "ci" in rows["team/net"] and "bob@laptop" not in rows["team/net"]
    assert re.search(r'class="num serial">1<', rows["team/app"])
    assert "bob@laptop" in rows["team/app"] and "alice" in rows["team/app"]
    assert re.search(r"<b>2</b> states.*<b>1</b> locked", html, re.S)
    assert html.count('<b class="action">write</b>') == 4
    assert '<b class="action">lock</b>' in html


async def test_state_page_shows_versions_diff_outputs_masked_resources_and_lock(
    client, conn: asyncpg.Connection
) -> None:
    for body in shared_history():
        await write_version(conn, "team/net", body, actor="ci")
    document = json.loads(shared_history()[-1])
    document["serial"] = 7
    document["outputs"]["db_password"] = {"value": "hunter2", "type": "string", "sensitive": True}
    await write_version(conn, "team/net", json.dumps(document).encode(), actor="ci")
    await locks.lock(
        conn, "team/net", {"ID": "l-9", "Who": "carol@ci"}, who=Principal("carol", Role.WRITE)
    )
    html = await page(client, "/ui/state", {"name": "team/net"})
    assert re.findall(r'<tr data-serial="(\d+)">', html) == [str(s) for s in range(7, 0, -1)]
    assert "hunter2" not in html and "(sensitive)" in html
    assert 'id="lock-holder">carol@ci<' in html and 'id="force-unlock"' in html
    assert "aws_subnet.a[0]" in html and "aws_instance.web[&#34;x&#34;]" in html
    # serial 2 changed web["x"]'s size; 3 added the eip
    diff = await page(client, "/ui/state", {"name": "team/net", "from": 1, "to": 3})
    assert re.search(r'class="add">\+ <a [^>]+>aws_eip.ip</a>', diff)
    assert re.search(r"~ <a [^>]+>aws_instance.web\[&#34;x&#34;\]</a>", diff)
    assert "<code>size</code>" in diff
    searched = await page(client, "/ui/state", {"name": "team/net", "q": "aws_subnet"})
    listed = re.findall(r"<tr><td><a href=\"/ui/resource[^>]+>([^<]+)</a>", searched)
    assert listed == ["aws_subnet.a[0]", "aws_subnet.a[1]", "aws_subnet.a[2]"]


async def test_the_versions_timeline_pages_back_from_the_newest(
    client, conn: asyncpg.Connection
) -> None:
    for serial in range(1, TIMELINE + 6):
        await write_version(conn, "long", hub(serial % 3 + 1, serial=serial), actor="ci")
    newest = await page(client, "/ui/state", {"name": "long"})
    serials = [int(s) for s in re.findall(r'<tr data-serial="(\d+)">', newest)]
    assert serials == list(range(TIMELINE + 5, 5, -1))
    older = re.search(r'id="older" href="([^"]+)"', newest)
    assert older and "before=6" in older.group(1)
    rest = await page(client, older.group(1).replace("&amp;", "&"))
    assert re.findall(r'<tr data-serial="(\d+)">', rest) == ["5", "4", "3", "2", "1"]
    assert 'id="serial">55<' in rest and 'id="older"' not in rest
    # serial 5 (3 spokes) against 4 (2 spokes): a subnet and an instance added
    five = re.search(r'<tr data-serial="5">(.*?)</tr>', rest, re.S)
    assert five
    assert re.findall(r'class="num (?:add|change|remove)">(\d+)<', five.group(1)) == ["2", "0", "0"]


async def test_resource_page_masks_sensitive_attributes_and_shows_history_and_edges(
    client, conn: asyncpg.Connection
) -> None:
    for body in shared_history():
        await write_version(conn, "team/net", body, actor="ci")
    secret = state(
        [
            resource(
                "aws_db_instance",
                "db",
                attributes={"password": "pw-1", "port": 5432},
                sensitive=PASSWORD,
            )
        ]
    )
    await write_version(conn, "team/db", secret, actor="ci")
    db = await page(client, "/ui/resource", {"state": "team/db", "address": "aws_db_instance.db"})
    assert "pw-1" not in db and f"&#34;password&#34;: &#34;{MASK}&#34;" in db
    html = await page(
        client, "/ui/resource", {"state": "team/net", "address": 'aws_instance.web["x"]'}
    )
    history = re.findall(
        r'<tr class="(created|changed|removed)"><td class="num"><a[^>]*>(\d+)', html
    )
    assert history == [("changed", "2"), ("created", "1")]
    dependencies = re.search(r'<ul id="dependencies">(.*?)</ul>', html, re.S)
    assert dependencies and "aws_subnet.a[0]" in dependencies.group(1)


async def test_a_small_blast_radius_picture_draws_each_resource(
    client, conn: asyncpg.Connection
) -> None:
    await write_version(conn, "hub", hub(3), actor="ci")
    html = await page(client, "/ui/resource", {"state": "hub", "address": "aws_vpc.main"})
    svg = re.search(r'<svg id="radius".*?</svg>', html, re.S)
    assert svg
    nodes = re.findall(r'<g class="node" data-depth="(\d)" data-address="([^"]+)"', svg.group(0))
    assert [d for d, _ in nodes] == ["1"] * 3 + ["2"] * 3
    assert 'class="node root" data-depth="0" data-address="aws_vpc.main"' in svg.group(0)
    assert "data-more" not in svg.group(0) and "node group" not in svg.group(0)
    # unbundled: root -> 3 subnets, and each instance from each subnet (depends_on the group)
    assert len(re.findall(r'class="edge"', svg.group(0))) == 3 + 3 * 3
    assert "<b>6</b> resources depend on it" in html


async def test_a_big_blast_radius_picture_groups_each_depth_and_expands_a_group(
    client, conn: asyncpg.Connection
) -> None:
    spokes = DRAWN_PER_LAYER + 7
    await write_version(conn, "hub", hub(spokes), actor="ci")
    params = {"state": "hub", "address": "aws_vpc.main"}
    html = await page(client, "/ui/resource", params)
    svg = re.search(r'<svg id="radius".*?</svg>', html, re.S)
    assert svg
    groups = re.findall(
        r'data-depth="(\d)" data-group="([^"]+)" data-members="(\d+)"', svg.group(0)
    )
    assert groups == [("1", "aws_subnet.s", str(spokes)), ("2", "aws_instance.web", str(spokes))]
    assert f"aws_subnet.s x {spokes}" in svg.group(0)
    # one line a pair of groups: root -> subnets, subnets -> instances (each from each)
    bundles = re.findall(r'class="edge bundle" data-edges="(\d+)"', svg.group(0))
    assert bundles == [str(spokes), str(spokes * spokes)]
    assert f"<b>{2 * spokes}</b> resources depend on it" in html
    link = re.search(r'<a href="([^"]+)"><g class="node group" data-depth="1"', svg.group(0))
    assert link and "expand=aws_subnet.s" in link.group(1)

    expanded = await page(client, "/ui/resource", {**params, "expand": "aws_subnet.s"})
    svg = re.search(r'<svg id="radius".*?</svg>', expanded, re.S)
    assert svg
    nodes = re.findall(r'<g class="node" data-depth="1" data-address="([^"]+)"', svg.group(0))
    assert len(nodes) == DRAWN_PER_LAYER and nodes[:3] == [f"aws_subnet.s[{i}]" for i in range(3)]
    assert re.findall(r'data-more="(\d+)"', svg.group(0)) == ["7"]
    assert 'data-group="aws_instance.web"' in svg.group(0)  # still one box
    assert 'id="radius-expanded"' in expanded


async def test_blast_radius_picture_says_how_many_lie_beyond_its_depth(
    client, conn: asyncpg.Connection
) -> None:
    await write_version(conn, "hub", hub(3), actor="ci")
    params = {"state": "hub", "address": "aws_vpc.main"}
    cut = await page(client, "/ui/resource", {**params, "depth": "1"})
    svg = re.search(r'<svg id="radius".*?</svg>', cut, re.S)
    assert svg and re.findall(r'data-depth="(\d)" data-address=', svg.group(0)) == ["0"] + ["1"] * 3
    beyond = re.search(r'data-depth="2" data-beyond="3">.*?<text[^>]*>([^<]+)</text>', svg.group(0))
    assert beyond and beyond.group(1) == "3 more beyond depth 1"
    assert "<b>6</b> resources depend on it" in cut  # the whole radius
    assert '<b id="radius-beyond">3 more beyond depth 1</b>' in cut
    whole = await page(client, "/ui/resource", params)  # within the default depth: no cut
    assert "beyond" not in whole


async def test_pages_of_a_state_with_only_a_lock_and_of_a_leaf(
    client, conn: asyncpg.Connection
) -> None:
    await locks.lock(
        conn, "team/new", {"ID": "first", "Who": "fay@ci"}, who=Principal("fay", Role.WRITE)
    )
    overview = await page(client, "/")
    row = re.search(r'<tr data-state="team/new">(.*?)</tr>', overview, re.S)
    assert row and 'class="num serial"><' in row.group(1) and "fay@ci" in row.group(1)
    html = await page(client, "/ui/state", {"name": "team/new"})
    assert 'id="lock-holder">fay@ci<' in html and "<tr data-serial" not in html
    await write_version(conn, "hub", hub(2), actor="ci")
    leaf = await page(client, "/ui/resource", {"state": "hub", "address": "aws_instance.web[0]"})
    assert "<b>0</b> resources depend on it" in leaf
    assert leaf.count('<g class="node') == 1  # itself
    upward = await page(
        client,
        "/ui/resource",
        {"state": "hub", "address": "aws_instance.web[0]", "direction": "dependencies"},
    )
    assert "<b>3</b> resources it depends on" in upward
    nodes = re.findall(r'data-address="([^"]+)"', upward)
    assert nodes == ["aws_instance.web[0]", "aws_subnet.s[0]", "aws_subnet.s[1]", "aws_vpc.main"]


async def test_inventory_counts_groups_and_searches_attributes(
    client, conn: asyncpg.Connection
) -> None:
    await write_version(conn, "hub", hub(4), actor="ci")
    html = await page(client, "/ui/inventory")
    by_type = re.search(r'<table id="by-type">(.*?)</table>', html, re.S)
    assert by_type
    counts = re.findall(r">([a-z_]+)</a></span></td>\s*<td class=\"num\">(\d+)", by_type.group(1))
    assert counts == [("aws_instance", "4"), ("aws_subnet", "4"), ("aws_vpc", "1")]
    found = await page(client, "/ui/inventory", {"q": '{"id": "vpc-1"}'})
    table = re.search(r'<table id="found">(.*?)</table>', found, re.S)
    assert table and "aws_vpc.main" in table.group(1) and "aws_subnet" not in table.group(1)
    bad = await page(client, "/ui/inventory", {"q": "[1"})
    assert 'class="error"' in bad


async def test_iac_page_lists_systems_managed_resources_and_applies(
    client, conn: asyncpg.Connection
) -> None:
    await create_scope(conn, "sales", "Sales")
    await apply_tables(conn, "sales", "crm", ["contacts"])
    html = await page(client, "/ui/iac")
    system = re.search(r'<div class="system" data-system="crm">(.*?)</ol>', html, re.S)
    assert system
    assert ">contacts</a>" in system.group(1) and "iac:sales/crm" in system.group(1)
    assert '<b class="action">apply</b>' in system.group(1) and "create 1" in system.group(1)


async def test_errors_are_pages_with_their_status(client, conn: asyncpg.Connection) -> None:
    missing = await client.get("/ui/state", params={"name": "nope"}, headers=HTML)
    assert missing.status_code == 404 and "no state &#39;nope&#39;" in missing.text
    bad = await client.get("/ui/state", params={"name": "x", "from": "a", "to": "1"}, headers=HTML)
    assert bad.status_code == 400 and "from must be an integer" in bad.text


async def _statements(client, statements, path: str, params: dict[str, Any]) -> int:
    statements.statements.clear()
    await page(client, path, params)
    return len(statements.statements)


async def test_each_page_runs_as_many_statements_small_or_big(
    client, conn: asyncpg.Connection, statements
) -> None:
    await create_scope(conn, "sales", "Sales")
    await apply_tables(conn, "sales", "crm", ["contacts"])
    for name in ("a", "b"):
        await write_version(conn, name, hub(2), actor="ci")
    cases = [
        ("/", {}),
        ("/ui/state", {"name": "a"}),
        ("/ui/resource", {"state": "a", "address": "aws_vpc.main"}),
        ("/ui/inventory", {"q": '{"id": "vpc-1"}'}),
        ("/ui/iac", {}),
        ("/ui/policies", {}),
    ]

    async def count() -> list[int]:
        # a blast radius is walked (and kept) by the first page showing it: then read
        await page(client, "/ui/resource", {"state": "a", "address": "aws_vpc.main"})
        return [await _statements(client, statements, path, p) for path, p in cases]

    small = await count()
    await apply_tables(conn, "sales", "erp", ["orders", "items", "stock"])
    for name in [f"s{i}" for i in range(30)]:
        await write_version(conn, name, hub(3), actor="ci")
    for serial in range(2, 12):
        await write_version(conn, "a", hub(40 + serial, serial=serial), actor="ci")
    assert await count() == small == [6, 6, 6, 5, 3, 2]  # as README's "Dashboard" says


async def test_a_500_member_radius_renders_grouped(client, conn: asyncpg.Connection) -> None:
    """A radius of 500 members in four counted groups (tests/helpers/states.py)."""
    document = grouped_radius()
    await write_version(conn, "big", document, actor="ci")
    params = {"state": "big", "address": "aws_vpc.main"}
    await page(client, "/ui/resource", params)  # the first view walks the radius and keeps it
    html = await page(client, "/ui/resource", params)  # its time: bench --only dashboard
    assert "<b>500</b> resources depend on it" in html
    groups = re.findall(r'data-group="([^"]+)" data-members="(\d+)"', html)
    assert groups == [
        ("aws_subnet.a", "100"),
        ("aws_subnet.b", "100"),
        ("aws_instance.web", "150"),
        ("aws_eip.ip", "150"),
    ]


async def test_policies_page_lists_open_violations_by_state_linked_to_resources(
    client, conn: asyncpg.Connection
) -> None:
    def buckets(**acls: str) -> bytes:
        return state([resource("aws_s3_bucket", n, attributes={"acl": a}) for n, a in acls.items()])

    await write_version(conn, "prod/s3", buckets(a="public-read", b="private"), actor="ci")
    await write_version(conn, "prod/logs", buckets(x="public-read"), actor="ci")
    await write_version(conn, "stage/s3", buckets(a="public-read"), actor="ci")  # not covered
    policy = {
        "name": "public-bucket",
        "severity": "CRITICAL",
        "resourceType": "aws_s3_bucket",
        "states": "prod/*",
        "condition": '$.acl == "public-read"',
    }
    created = await client.post(
        "/graphql",
        json={
            "query": "mutation($i: CreatePolicyInput!) { createPolicy(input: $i) { name } }",
            "variables": {"i": policy},
        },
    )
    assert created.json() == {"data": {"createPolicy": {"name": "public-bucket"}}}
    html = await page(client, "/ui/policies")
    section = re.search(
        r'<section class="policy" data-policy="public-bucket" data-open="2">'
        r"(.*?)</section>",
        html,
        re.S,
    )
    assert section, html
    found = section.group(1)
    assert re.findall(r'<tr data-state="([^"]+)">', found) == ["prod/logs", "prod/s3"]
    links = [markup.unescape(h) for h in re.findall(r'href="(/ui/resource\?[^"]+)"', found)]
    assert links == [
        "/ui/resource?state=prod%2Flogs&address=aws_s3_bucket.x",
        "/ui/resource?state=prod%2Fs3&address=aws_s3_bucket.a",
    ]
    assert "stage/s3" not in found and "aws_s3_bucket.b" not in found
