"""Where each table goes on a cluster (app/citus.py), checked on the migrated schema of a
single node: a table a migration adds is placed by a rule or the test says which to add.
A single node is left as it is."""

import asyncpg
from hypothesis import given
from hypothesis import strategies as st

from app import citus, db
from app.citus import COORDINATOR_TABLES, REFERENCE_TABLES, Placement, Table, place


async def test_every_table_of_the_schema_is_placed(conn: asyncpg.Connection) -> None:
    tables = await citus.tables(conn)
    names = {t.name for t in tables}
    # a new table without state_id must be listed (Unclassified names the lists)
    placed = {t.name: place(t) for t in tables}
    assert placed["resources"] is Placement.DISTRIBUTED
    assert placed["states"] is Placement.REFERENCE
    assert placed["events"] is Placement.COORDINATOR
    # no stale entry: each listed table exists
    assert set(REFERENCE_TABLES) | set(COORDINATOR_TABLES) <= names
    # what the graph grows with is sharded: every table with state_id but the listed ones
    for table in tables:
        if "state_id" in table.columns and table.name not in (
            set(REFERENCE_TABLES) | set(COORDINATOR_TABLES)
        ):
            assert placed[table.name] is Placement.DISTRIBUTED


def test_an_unlisted_table_without_state_id_is_refused() -> None:
    table = Table("new_feature_settings", frozenset({"id", "name"}))
    try:
        place(table)
    except citus.Unclassified as exc:
        assert "new_feature_settings" in str(exc)
    else:
        raise AssertionError("an unlisted table without state_id was placed")
    # migrate still places it (a reference table), saying so in its log
    assert citus.layout([table]) == {"new_feature_settings": Placement.REFERENCE}


names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=20)


@given(name=names, columns=st.frozensets(names, max_size=5))
def test_placement_rules(name: str, columns: frozenset[str]) -> None:
    table = Table(name, columns | {"state_id"})
    expected = (
        Placement.COORDINATOR
        if name in COORDINATOR_TABLES
        else Placement.REFERENCE
        if name in REFERENCE_TABLES
        else Placement.DISTRIBUTED
    )
    assert place(table) is expected


async def test_a_single_node_is_left_as_it_is(conn: asyncpg.Connection) -> None:
    assert not await citus.installed(conn)
    assert await db.migrate(conn) == []  # nothing pending, nothing distributed
    assert not await conn.fetchval("SELECT true FROM pg_extension WHERE extname = 'citus'")
