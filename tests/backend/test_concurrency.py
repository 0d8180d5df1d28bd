"""Racing clients: one lock winner, one version per serial, never a 500."""

import asyncio
import json
from collections import Counter

from tests.helpers.backend import content_md5, lock_info, tf_state, versions

NAME = "race/state"
URL = f"/states/{NAME}"


async def test_50_concurrent_locks_have_exactly_one_winner(client, conn) -> None:
    infos = [lock_info(who=f"runner-{i}") for i in range(50)]
    bodies = [json.dumps(info).encode() for info in infos]
    responses = await asyncio.gather(
        *(client.request("LOCK", URL, content=b, headers=content_md5(b)) for b in bodies)
    )
    assert Counter(r.status_code for r in responses) == {200: 1, 409: 49}
    winner = next(info for info, r in zip(infos, responses, strict=True) if r.status_code == 200)
    assert {r.json()["ID"] for r in responses if r.status_code == 409} == {winner["ID"]}
    held = await conn.fetchval("SELECT lock_id FROM state_locks")
    assert held == winner["ID"]


async def test_20_posts_racing_on_one_serial_leave_one_version(client, conn) -> None:
    await client.post(URL, content=tf_state(serial=1))
    bodies = [tf_state(serial=2, value=f"racer-{i}") for i in range(20)]
    responses = await asyncio.gather(*(client.post(URL, content=b) for b in bodies))
    assert Counter(r.status_code for r in responses) == {200: 1, 409: 19}
    assert await versions(conn, NAME) == [1, 2]
    winner = next(b for b, r in zip(bodies, responses, strict=True) if r.status_code == 200)
    assert (await client.get(URL)).content == winner


async def test_the_same_post_racing_itself_is_stored_once(client, conn) -> None:
    body = tf_state(serial=1)
    responses = await asyncio.gather(*(client.post(URL, content=body) for _ in range(20)))
    assert {r.status_code for r in responses} == {200}
    assert [r.json()["created"] for r in responses].count(True) == 1
    assert await versions(conn, NAME) == [1]
