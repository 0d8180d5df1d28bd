"""A state's output readers (migration 0020) and the reduced state they, and read
tokens, get from a GET: a v4 state of the outputs alone (app/readers.py says who)."""

from typing import Any
from uuid import UUID

import asyncpg

from app.errors import Forbidden, NotFound
from app.graph.events import append_event
from app.graph.queries import valid_at
from app.graph.readback import OUTPUT_SELECT, find_version, output_of
from app.jsonutil import dumps
from app.readers import OutputReaders
from app.tfstate import render_state

REDUCED_HEADER = "X-Infragraph-Reduced"  # on a GET answered with the outputs alone


def _readers(record: asyncpg.Record | None) -> OutputReaders:
    if record is None:
        return OutputReaders()
    return OutputReaders(
        tuple(record["output_reader_tokens"]), tuple(record["output_reader_states"])
    )


async def readers_of(conn: asyncpg.Connection, name: str) -> OutputReaders:
    """Who state `name` names as its output readers (nobody when there is no state)."""
    return _readers(
        await conn.fetchrow(
            "SELECT output_reader_tokens, output_reader_states FROM states WHERE name = $1", name
        )
    )


async def readers_by_id(
    conn: asyncpg.Connection, state_ids: list[UUID]
) -> dict[UUID, OutputReaders]:
    rows = await conn.fetch(
        """SELECT id, output_reader_tokens, output_reader_states FROM states
           WHERE id = ANY($1::uuid[])""",
        state_ids,
    )
    return {r["id"]: _readers(r) for r in rows}


async def set_readers(
    conn: asyncpg.Connection, name: str, readers: OutputReaders, *, actor: str
) -> OutputReaders:
    """Name the output readers of state `name` (replacing the ones named before); recorded
    as an output-readers event."""
    async with conn.transaction():
        state_id = await conn.fetchval(
            """UPDATE states SET output_reader_tokens = $2, output_reader_states = $3
               WHERE name = $1 RETURNING id""",
            name,
            list(readers.tokens),
            list(readers.states),
        )
        if state_id is None:
            raise NotFound(f"no state {name!r}")
        await append_event(
            conn,
            state_name=name,
            state_id=state_id,
            action="output-readers",
            actor=actor,
            detail={"tokens": list(readers.tokens), "states": list(readers.states)},
        )
    return readers


async def reduced_state(
    conn: asyncpg.Connection, name: str, *, sensitive: bool, actor: str
) -> bytes:
    """State `name`'s current version as a v4 state with its outputs (the sensitive ones
    only when `sensitive`) and no resource; recorded as a read-outputs event."""
    version = await find_version(conn, name)
    if version["encrypted"]:
        raise Forbidden(
            f"state {name!r} is encrypted by OpenTofu: the server cannot take its outputs out "
            "of it, so only a token that may plan it reads it (whole)",
            {"state": name, "reduced": "outputs"},
        )
    state_id = version["state_id"]
    rows = await conn.fetch(
        f"""SELECT {OUTPUT_SELECT} FROM outputs o
            WHERE {valid_at("o")} AND ($3 OR o.sensitive IS NOT TRUE) ORDER BY position""",
        state_id,
        version["serial"],
        sensitive,
    )
    document: dict[str, Any] = render_state(
        serial=version["serial"],
        lineage=version["lineage"],
        terraform_version=version["terraform_version"],
        instances=(),
        outputs=[output_of(r, state_id) for r in rows],
        extra={},
    )
    await append_event(
        conn,
        state_name=name,
        state_id=state_id,
        action="read-outputs",
        actor=actor,
        serial=version["serial"],
        detail={"reduced": "outputs", "sensitive": sensitive, "outputs": len(rows)},
    )
    return dumps(document, indent=True)
