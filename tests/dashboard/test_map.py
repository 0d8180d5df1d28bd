"""The states map page, rendered in-process from real states reading each other's outputs
(terraform_remote_state): every linked state once, in the column of its link depth, a
line a producer-consumer pair labelled with the outputs read, stale consumers marked
once a producer writes another value; a fixed number of statements, fast at 50 states,
and only the links between states the token may read."""

import html as markup
import re

import asyncpg

from app.access import Role
from app.graph.write.version import write_version
from tests.helpers.app import as_token
from tests.helpers.dashboard import HTML, page
from tests.helpers.links import SERVERS, estate, linked

NODE = re.compile(
    r'<g class="node state[^"]*" data-state="([^"]+)" data-column="(\d+)" '
    r'data-stale="(true|false)"'
)
LINE = re.compile(
    r'<g class="link[^"]*" data-producer="([^"]+)" data-consumer="([^"]+)" '
    r'data-stale="(true|false)"><title>([^<]*)</title>'
)


async def _write_estate(conn: asyncpg.Connection, reads: dict[str, list[str]]) -> None:
    for name, producers in reads.items():
        await write_version(conn, name, linked(name, producers), actor="ci", servers=SERVERS)


def _drawn(html: str) -> tuple[dict[str, tuple[int, bool]], dict[tuple[str, str], bool]]:
    nodes = {markup.unescape(n): (int(c), s == "true") for n, c, s in NODE.findall(html)}
    lines = {
        (markup.unescape(p), markup.unescape(c)): s == "true" for p, c, s, _ in LINE.findall(html)
    }
    return nodes, lines


async def test_fifty_states_in_columns_of_link_depth_with_stale_consumers_marked(
    client, conn: asyncpg.Connection
) -> None:
    reads = estate(50)
    await _write_estate(conn, reads)
    await write_version(conn, "alone", linked("alone", []), actor="ci", servers=SERVERS)
    html = await page(client, "/ui/map")
    nodes, lines = _drawn(html)
    assert set(nodes) == set(reads)  # "alone" reads none and is read by none
    assert {name: column for name, (column, _) in nodes.items()} == {
        name: {"core": 0, "platform": 1, "apps": 2}[name.split("/")[0]] for name in reads
    }
    assert lines == {(p, c): False for c, producers in reads.items() for p in producers}
    titles = {markup.unescape(t) for *_, t in LINE.findall(html)}
    assert "core/0 → platform/00: endpoint, id (read by data.terraform_remote_state.core_0)" in (
        titles
    )
    assert re.search(r"<b>50</b> states linked.*<b>90</b> data sources.*<b>0</b> stale", html, re.S)
    # core/0 writes another id: each state reading it is stale, and only those links
    await write_version(
        conn, "core/0", linked("core/0", [], version=2), actor="ci", servers=SERVERS
    )
    html = await page(client, "/ui/map")
    nodes, lines = _drawn(html)
    readers = {c for c, producers in reads.items() if "core/0" in producers}
    assert len(readers) == 12
    assert {name for name, (_, stale) in nodes.items() if stale} == readers
    assert {pair for pair, stale in lines.items() if stale} == {("core/0", c) for c in readers}
    assert re.search(r"<b>12</b> stale consumers", html)
    rows = re.findall(
        r'<tr data-producer="([^"]+)" data-consumer="([^"]+)" data-stale="true">(.*?)</tr>',
        html,
        re.S,
    )
    assert {(p, c) for p, c, _ in rows} == {("core/0", c) for c in readers}
    assert all('class="changed" title="changed at serial 2 of core/0"' in r for *_, r in rows)
    assert all(">serial 2<" in r and ">endpoint</code>" in r for *_, r in rows)


async def test_the_map_runs_as_many_statements_at_any_size(
    client, conn: asyncpg.Connection, statements
) -> None:
    await _write_estate(conn, estate(20))
    statements.statements.clear()
    await page(client, "/ui/map")
    small = len(statements.statements)
    await _write_estate(conn, estate(50))
    statements.statements.clear()
    await page(client, "/ui/map")
    assert len(statements.statements) == small == 3  # as docs/dashboard.md says
    html = await page(client, "/ui/map")
    assert html.count('class="node state') == 50  # its time: bench --only map


async def test_a_read_token_sees_only_links_between_its_states(
    closed_app, conn: asyncpg.Connection, db_token
) -> None:
    reads = {"team/net": [], "team/app": ["team/net"], "other/app": ["team/net"]}
    await _write_estate(conn, reads)
    secret = await db_token("map-reader", Role.READ, states=["team/*"])
    async with as_token(closed_app, secret, HTML) as client:
        html = (await client.get("/ui/map")).text
    nodes, lines = _drawn(html)
    assert set(nodes) == {"team/net", "team/app"} and set(lines) == {("team/net", "team/app")}
    assert "other/" not in html


async def test_with_no_link_the_map_says_how_one_is_made(client, conn: asyncpg.Connection) -> None:
    await write_version(conn, "alone", linked("alone", []), actor="ci", servers=SERVERS)
    html = await page(client, "/ui/map")
    assert "No state reads another" in html and "<svg" not in html
