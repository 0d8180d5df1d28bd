"""A version's declared edges instance to instance, whatever the grain they are stored
at (app/graph/hops.py expands them); and edges stored as they were before migration
0030, to convert."""

from typing import Any

import asyncpg

from app.graph.hops import pairs_sql
from app.graph.write.result import WrittenRows
from app.tfstate.parse import resolve_edges
from app.tfstate.reduction import direct_flags
from tests.helpers.states import BUILTIN, resource, state

_PAIRS = f"SELECT d.* FROM {pairs_sql('$1', '$2')} d"


async def instance_edges(
    conn: Any, name: str, serial: int | None = None
) -> list[tuple[str, str, bool]]:
    """The edges of state `name` at `serial` (None: its current version): (source
    address, target address, direct), sorted."""
    state_id, current = await conn.fetchrow(
        "SELECT id, current_serial FROM states WHERE name = $1", name
    )
    serial = current if serial is None else serial
    address = {
        r["id"]: r["address"]
        for r in await conn.fetch("SELECT id, address FROM resources WHERE state_id = $1", state_id)
    }
    rows = await conn.fetch(_PAIRS, state_id, serial)
    return sorted(
        (address[r["from_resource_id"]], address[r["to_resource_id"]], r["direct"]) for r in rows
    )


def history() -> list[bytes]:
    """Versions with count and for_each resources, edges implied and not, a resource that
    grows from one instance to two, and one on a cycle."""

    def terraform_data(name: str, keys: Any = None, depends: tuple[str, ...] = ()) -> Any:
        return resource(
            "terraform_data",
            name,
            provider=BUILTIN,
            keys=keys,
            depends_on=[f"terraform_data.{d}" for d in depends],
            attributes={"id": name},
        )

    first = [
        terraform_data("net", [0, 1, 2], ("base",)),
        terraform_data("sub", ["a", "b"], ("net",)),
        terraform_data("app", [0, 1], ("net", "sub")),
        terraform_data("one"),
        terraform_data("cyc", [0, 1], ("loop",)),
        terraform_data("loop", [0, 1], ("cyc",)),
        terraform_data("top", None, ("app", "net", "one", "sub")),
        terraform_data("base"),
    ]
    second = [*first[:3], terraform_data("one", [0, 1]), *first[4:]]
    second[-2] = terraform_data("top", None, ("app", "net", "one"))
    return [state(first, serial=1), state(second, serial=2)]


async def old_writer(conn: asyncpg.Connection, version_id: Any, rows: WrittenRows) -> None:
    """How edges were stored before migration 0030: every edge instance to instance with
    its flag (each version's edges anew: the same rows as sharing them)."""
    await conn.execute(
        """UPDATE resource_dependencies SET serial_to = $2
           WHERE state_id = $1 AND serial_to IS NULL""",
        rows.state_id,
        rows.serial,
    )
    pairs = resolve_edges(rows.refs)
    flags = direct_flags(len(rows.refs), pairs)
    await conn.copy_records_to_table(
        "resource_dependencies",
        columns=(
            "state_id",
            "state_version_id",
            "serial_from",
            "from_resource_id",
            "to_resource_id",
            "direct",
        ),
        records=[
            (rows.state_id, version_id, rows.serial, rows.row_ids[a], rows.row_ids[b], flag)
            for (a, b), flag in zip(pairs, flags, strict=True)
        ],
    )


async def old_edges(conn: Any, name: str, serial: int) -> list[tuple[str, str, bool]]:
    """The edges of state `name` at `serial` as stored instance to instance, before
    migration 0030."""
    rows = await conn.fetch(
        """SELECT f.address AS source, t.address AS target, d.direct
           FROM states s JOIN resource_dependencies d ON d.state_id = s.id
           JOIN resources f ON f.state_id = d.state_id AND f.id = d.from_resource_id
           JOIN resources t ON t.state_id = d.state_id AND t.id = d.to_resource_id
           WHERE s.name = $1 AND d.serial_from <= $2
             AND (d.serial_to IS NULL OR d.serial_to > $2)""",
        name,
        serial,
    )
    return sorted((r["source"], r["target"], r["direct"]) for r in rows)
