"""A resource's history: a state written 30 times with known changes gives exactly
those entries per address, newest first, paged, sensitive values withheld."""

from app.graph.history import Change, histories
from app.graph.resources import find_resource
from app.graph.write.version import write_version
from tests.helpers.histories import history_version


async def _entries(conn, address: str, serial: int | None = None, first: int = 50) -> list:
    found = await find_resource(conn, "h", address, serial)
    key = (found["id"], found["version_id"])
    return (await histories(conn, [key], first=first))[key]


async def test_thirty_writes_give_exactly_their_changes(conn) -> None:
    for serial in range(1, 31):
        await write_version(conn, "h", history_version(serial), actor=f"writer{serial}")
    vpc = await _entries(conn, "aws_vpc.main")
    assert [(e.serial, e.change) for e in vpc.rows] == [
        (30, Change.CHANGED),
        (20, Change.CHANGED),
        (10, Change.CHANGED),
        (1, Change.CREATED),
    ]
    assert [a.path for a in vpc.rows[0].attributes] == [("cidr",)]
    assert (vpc.rows[0].attributes[0].old, vpc.rows[0].attributes[0].new) == (
        "10.2.0.0/16",
        "10.3.0.0/16",
    )
    assert vpc.rows[0].actor == "writer30" and vpc.rows[0].created_at is not None
    bucket = await _entries(conn, "aws_s3_bucket.b")
    assert [(e.serial, e.change) for e in bucket.rows] == [
        (20, Change.CREATED),
        (15, Change.REMOVED),
        (5, Change.CREATED),
    ]
    db = await _entries(conn, "aws_db_instance.db")
    assert [(e.serial, e.change) for e in db.rows] == [(12, Change.CHANGED), (1, Change.CREATED)]
    [change] = db.rows[0].attributes
    assert change.path == ("password",) and change.sensitive
    assert (change.old, change.new) == (None, None)  # withheld
    moved = await _entries(conn, "module.q.aws_sqs_queue.q")
    assert [(e.serial, e.change) for e in moved.rows] == [(25, Change.CREATED)]
    old_queue = await _entries(conn, "aws_sqs_queue.q", serial=24)
    assert [(e.serial, e.change) for e in old_queue.rows] == [(1, Change.CREATED)]
    # read at an older version, the history stops there
    assert [e.serial for e in (await _entries(conn, "aws_vpc.main", serial=15)).rows] == [10, 1]


async def test_history_pages_newest_first(conn) -> None:
    for serial in range(1, 31):
        await write_version(conn, "h", history_version(serial), actor="t")
    first = await _entries(conn, "aws_vpc.main", first=3)
    assert [e.serial for e in first.rows] == [30, 20, 10] and first.has_next
    assert first.total == 4
