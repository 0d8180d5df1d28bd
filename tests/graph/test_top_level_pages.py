"""A top-level list's pages (one owner: a top-N sort), counted or not."""

from app.graph.resources import ResourceFilter, search_resources
from app.graph.write.version import write_version
from tests.helpers.states import resource, state


async def test_pages_with_and_without_their_total(conn) -> None:
    await write_version(conn, "a", state([resource("t_x", "r", keys=list(range(5)))]), actor="t")
    await write_version(
        conn, "b", state([resource("t_x", "r", keys=list(range(3)))], lineage="b"), actor="t"
    )
    every = [("a", f"t_x.r[{i}]") for i in range(5)] + [("b", f"t_x.r[{i}]") for i in range(3)]
    for count in (True, False):
        walked, after = [], None
        while True:
            page = await search_resources(conn, first=3, after=after, count=count)
            assert page.total == (8 if count else None)
            walked += [(r["state_name"], r["address"]) for r in page.rows]
            if not page.has_next:
                break
            after = page.keys[-1]
        assert walked == every
        past_the_end = await search_resources(conn, first=3, after=page.keys[-1], count=count)
        assert past_the_end.rows == [] and past_the_end.total == (8 if count else None)
    nothing = ResourceFilter(state="none")
    assert (await search_resources(conn, nothing, first=3)).total == 0
    assert (await search_resources(conn, nothing, first=3, count=False)).rows == []
