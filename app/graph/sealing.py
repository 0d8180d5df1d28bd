"""A producer's sensitive outputs, as a consumer read them, are the consumer's secrets.

A `terraform_remote_state` data source stores the outputs it read in its `outputs`
attribute. Those its producer (a state of this server, app/tfstate/remote.py) marks
sensitive, in any version it keeps, are taken out of the consumer's row when the row is
written and kept with its other secrets (app/graph/sensitive.py: `split`; sealed under
INFRAGRAPH_ENCRYPTION_KEY when set). Nothing done to the producer afterwards (a DELETE,
a rename, pruning the versions that marked them) puts them back in the readable columns:
readers see null, attribute search never finds them.

The other order, a consumer written before its producer marks an output sensitive: the
producer's write re-seals the rows of every consumer (current and past versions) that
read such an output and hold it in clear (`reseal_consumers`), in the producer's
transaction. A row once sealed stays sealed: a producer that stops marking an output
does not unseal it (`rotate-key` keeps the paths a row's secrets were taken at).
"""

import asyncio
from collections.abc import Sequence
from uuid import UUID

import asyncpg

from app import crypto
from app.graph.readback import INSTANCE_SELECT, instance_of
from app.graph.sensitive import Path, opened, stored_instance
from app.tfstate import InstanceRow
from app.tfstate.remote import Server, remote_reads

# Output names sensitive in any kept version of the state named $1.
_SENSITIVE = """SELECT coalesce(array_agg(o.name ORDER BY o.name), '{}') FROM sensitive_outputs o
                JOIN states s ON s.id = o.state_id
                WHERE s.name = $1"""


def output_paths(names: Sequence[str]) -> list[Path]:
    """The cty paths of outputs in a data source's `outputs` attribute (`locate` steps
    into its {"value", "type"} wrapper when there is one)."""
    return [("outputs", name) for name in names]


class LinkedSensitive:
    """While a state is written: the paths to take out of a data source row for the
    outputs it read that its producer marks sensitive. `paths` is called from the worker
    thread that builds rows; it asks the event loop for a producer not seen yet, on the
    write's connection once `idle` lets it (the write holds `idle` while it uses it)."""

    def __init__(
        self,
        conn: asyncpg.Connection,
        servers: Sequence[Server],
        loop: asyncio.AbstractEventLoop,
        idle: asyncio.Lock | None = None,
    ) -> None:
        self._conn = conn
        self._servers = servers
        self._loop = loop
        self._idle = idle or asyncio.Lock()
        self._by_producer: dict[str, frozenset[str]] = {}

    async def _sensitive(self, producer: str) -> list[str]:
        async with self._idle:
            found: list[str] = await self._conn.fetchval(_SENSITIVE, producer)
        return found

    def paths(self, row: InstanceRow) -> list[Path]:
        reads = remote_reads([row], self._servers)
        if not reads:
            return []
        read = reads[0]
        names = self._by_producer.get(read.producer)
        if names is None:
            found = asyncio.run_coroutine_threadsafe(
                self._sensitive(read.producer), self._loop
            ).result()
            names = self._by_producer[read.producer] = frozenset(found)
        return output_paths(sorted(name for name in read.outputs if name in names))


# The rows (of any consumer, any version) linked to producer $1 that read an output
# sensitive there (of $2, _SENSITIVE's) and still hold its value in their attributes, with
# those outputs.
_CLEAR_READS = """
    SELECT r.state_id, r.id, array_agg(o.name ORDER BY o.name) AS names
    FROM state_links l
    JOIN resources r ON r.state_id = l.state_id AND r.id = l.resource_id
    CROSS JOIN LATERAL unnest($2::text[]) AS o (name)
    WHERE l.producer_name = $1 AND l.outputs ? o.name
      AND coalesce(r.attributes -> 'outputs' -> 'value' -> o.name,
                   r.attributes -> 'outputs' -> o.name, 'null') <> 'null'::jsonb
    GROUP BY r.state_id, r.id"""


async def reseal_consumers(conn: asyncpg.Connection, producer: str) -> int:
    """Take the outputs sensitive in `producer` out of its consumers' rows that still
    hold them; how many rows were re-sealed."""
    sensitive = await conn.fetchval(_SENSITIVE, producer)
    if not sensitive:
        return 0
    clear = {
        (r["state_id"], r["id"]): r["names"]
        for r in await conn.fetch(_CLEAR_READS, producer, sensitive)
    }
    if not clear:
        return 0
    found = await conn.fetch(
        f"""SELECT r.state_id, r.id, r.content_hash, {INSTANCE_SELECT}
            FROM resources r JOIN unnest($1::uuid[], $2::uuid[]) AS k (state_id, id)
                 ON r.state_id = k.state_id AND r.id = k.id""",
        [state_id for state_id, _ in clear],
        [row_id for _, row_id in clear],
    )
    ring = crypto.keyring()
    ids, attributes, secrets, hashes, states = [], [], [], [], []
    for record in found:
        state_id: UUID = record["state_id"]
        kept = [path for path, _ in opened(record["secrets"], state_id)]
        stored = stored_instance(
            instance_of(record, state_id),
            [*output_paths(clear[state_id, record["id"]]), *kept],
        )
        states.append(state_id)
        ids.append(record["id"])
        attributes.append(stored.row.attributes)
        secrets.append(stored.sealed(ring, state_id))
        hashes.append(stored.keyed_digest(ring) or record["content_hash"])
    await conn.execute(
        """UPDATE resources r SET attributes = s.attributes, secrets = s.secrets,
                  content_hash = s.content_hash
           FROM unnest($1::uuid[], $2::uuid[], $3::jsonb[], $4::bytea[], $5::bytea[])
                AS s (state_id, id, attributes, secrets, content_hash)
           WHERE r.state_id = s.state_id AND r.id = s.id""",
        states,
        ids,
        attributes,
        secrets,
        hashes,
    )
    return len(found)
