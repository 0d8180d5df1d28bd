"""A stored version read back: its rows as written (secrets put back), and its document
rendered from them, never from its raw bytes (export)."""

from typing import Any
from uuid import UUID

import asyncpg

from app.errors import BadInput, NotFound
from app.graph.events import append_event
from app.graph.queries import valid_at
from app.graph.sensitive import opened, restore
from app.jsonutil import JSON_NULL, loads
from app.tfstate import INSTANCE_COLUMNS, OUTPUT_COLUMNS, InstanceRow, OutputRow, render_state
from app.tfstate.order import in_document_order

_JSONB_INSTANCE = {
    "index_key",
    "attributes",
    "attributes_flat",
    "sensitive_attributes",
    "dependencies_raw",
    "depends_on_raw",
    "identity",
}
_JSONB_OUTPUT = {"value", "type"}


def _select_list(columns: tuple[str, ...], jsonb: set[str]) -> str:
    # JSONB read as text so a JSON null ('null') stays apart from an absent key (SQL NULL)
    return ", ".join(f"{c}::text AS {c}" if c in jsonb else c for c in columns)


def _from_text(record: asyncpg.Record, columns: tuple[str, ...], jsonb: set[str]) -> list[Any]:
    values = []
    for column in columns:
        value = record[column]
        if column in jsonb and value is not None:
            value = JSON_NULL if value == "null" else loads(value)
        values.append(value)
    return values


async def find_version(
    conn: asyncpg.Connection, name: str, serial: int | None = None
) -> asyncpg.Record:
    """The version row of state `name` at `serial` (default: current); NotFound otherwise."""
    record = await conn.fetchrow(
        """SELECT v.id, v.state_id, v.serial, v.lineage, v.terraform_version, v.extra,
                  v.omitted, v.layout, v.encrypted
           FROM states s JOIN state_versions v ON v.state_id = s.id
           WHERE s.name = $1 AND ($2::bigint IS NULL OR v.serial = $2)
           ORDER BY v.serial DESC LIMIT 1""",
        name,
        serial,
    )
    if record is None:
        what = f"state {name!r}" + (f" at serial {serial}" if serial is not None else "")
        raise NotFound(f"no {what}")
    return record


# A row's columns as select lists: read back with instance_of and output_of.
INSTANCE_SELECT = f"{_select_list(INSTANCE_COLUMNS, _JSONB_INSTANCE)}, secrets"
OUTPUT_SELECT = f"{_select_list(OUTPUT_COLUMNS, _JSONB_OUTPUT)}, secrets"


def instance_of(record: asyncpg.Record, state_id: UUID) -> InstanceRow:
    """The instance row as written (its secrets put back) from INSTANCE_SELECT."""
    row = InstanceRow(*_from_text(record, INSTANCE_COLUMNS, _JSONB_INSTANCE))
    if not record["secrets"]:
        return row
    return row._replace(attributes=restore(row.attributes, opened(record["secrets"], state_id)))


def output_of(record: asyncpg.Record, state_id: UUID) -> OutputRow:
    """The output row as written from OUTPUT_SELECT."""
    row = OutputRow(*_from_text(record, OUTPUT_COLUMNS, _JSONB_OUTPUT))
    if not record["secrets"]:
        return row
    return row._replace(value=restore(row.value, opened(record["secrets"], state_id)))


async def render_version(conn: asyncpg.Connection, version: asyncpg.Record) -> dict[str, Any]:
    """The state document of `version`, rendered from its normalized rows."""
    state_id = version["state_id"]
    instance_rows = await conn.fetch(
        f"SELECT {INSTANCE_SELECT} FROM resources r WHERE {valid_at('r')}",
        state_id,
        version["serial"],
    )
    output_rows = await conn.fetch(
        f"SELECT {OUTPUT_SELECT} FROM outputs o WHERE {valid_at('o')} ORDER BY position",
        state_id,
        version["serial"],
    )
    instances = (instance_of(r, state_id) for r in instance_rows)
    outputs = [output_of(r, state_id) for r in output_rows]
    return render_state(
        serial=version["serial"],
        lineage=version["lineage"],
        terraform_version=version["terraform_version"],
        instances=in_document_order(instances, version["layout"]),
        outputs=outputs,
        extra=version["extra"],
        omitted=version["omitted"],
    )


async def export_state(
    conn: asyncpg.Connection, name: str, *, serial: int | None = None, actor: str
) -> dict[str, Any]:
    """Render state `name` (current or at `serial`) from its rows and record the export."""
    version = await find_version(conn, name, serial)
    if version["encrypted"]:
        raise BadInput(
            f"state {name!r} at serial {version['serial']} is encrypted by OpenTofu: the server "
            "cannot read it, only serve its bytes through the HTTP backend"
        )
    document = await render_version(conn, version)
    await append_event(
        conn,
        state_name=name,
        state_id=version["state_id"],
        action="export",
        actor=actor,
        serial=version["serial"],
    )
    return document
