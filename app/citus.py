"""Sharding by state on Citus: which table goes where, and the step that puts it there.

On a database with the `citus` extension (or with INFRAGRAPH_CITUS=1, which creates it)
`infragraph migrate` ends by distributing what is not yet distributed: every table with a
`state_id` column is sharded by it, all co-located (a state's rows, versions, walks,
links and violations share one shard); the small tables that graph statements join
(`states`, `policies`) are reference tables (a copy on every node); the rest stays on the
coordinator (docs/scaling.md). A database without Citus is never touched.

Citus wants the distribution column in every unique key and in every foreign key
between distributed tables, so those that lack `state_id` take it first: the unique
keys of a state's rows hold within their state, which is what the server relies on.
"""

import dataclasses
import enum
import logging
from collections.abc import Iterable

import asyncpg

log = logging.getLogger("infragraph.citus")

DISTRIBUTION_COLUMN = "state_id"
# The first distributed table: the others are co-located with it.
ANCHOR = "state_versions"


class Placement(enum.Enum):
    DISTRIBUTED = "distributed by state_id"
    REFERENCE = "reference table"
    COORDINATOR = "on the coordinator"


# Small tables without state_id that statements on distributed tables join: a copy on
# every node, so those joins stay on the state's shard.
REFERENCE_TABLES = {
    "states": "every graph statement joins it (names, kinds); one row a state",
    "policies": "joined with violations and resources when a write is checked",
    # has state_id, but is read with other states' rows: a reference table, not sharded
    "sensitive_outputs": "each producer's sensitive output names, read with its consumers' "
    "rows (a few rows a state)",
}
# Tables that stay plain tables of the coordinator, with why. A table with state_id listed
# here is the exception to the rule that such tables are distributed.
COORDINATOR_TABLES = {
    "schema_migrations": "the migrations' own record",
    "events": "a deleted state's events keep a NULL state_id; read in time order across "
    "states; its triggers NOTIFY the listeners, which listen on the coordinator",
    "webhooks": "settings, read by the delivery worker",
    "webhook_deliveries": "queued by a trigger on events, taken by the worker (SKIP LOCKED)",
    "api_tokens": "looked up by hash on every request; its trigger closes access",
    "access_closed": "one row, written by the api_tokens trigger",
    "scopes": "the IaC catalog: written and read by IaC plan and apply only",
    "tables": "the IaC catalog",
    "columns": "the IaC catalog",
    "rules": "the IaC catalog",
    "triggers": "the IaC catalog",
    "views": "the IaC catalog",
    "grants": "the IaC catalog",
    "client_access": "the IaC catalog",
    "commands": "the IaC catalog",
    "insight_selections": "the IaC catalog",
    "public_reads": "the IaC catalog",
    "records": "the IaC catalog's records",
    "iac_state": "what IaC applied, per scope",
    "iac_secret_key": "one row",
}


@dataclasses.dataclass(frozen=True)
class Table:
    name: str
    columns: frozenset[str]


class Unclassified(Exception):
    """A table that no rule places: it has no state_id and no entry in the lists above."""


def place(table: Table) -> Placement:
    """Where a table goes on a cluster (pure: by its name and columns)."""
    if table.name in COORDINATOR_TABLES:
        return Placement.COORDINATOR
    if table.name in REFERENCE_TABLES:
        return Placement.REFERENCE
    if DISTRIBUTION_COLUMN in table.columns:
        return Placement.DISTRIBUTED
    raise Unclassified(
        f"table {table.name!r} has no {DISTRIBUTION_COLUMN} column and is not listed in "
        "app/citus.py (REFERENCE_TABLES or COORDINATOR_TABLES): say where it goes"
    )


def layout(tables: Iterable[Table]) -> dict[str, Placement]:
    """Each table's placement; a table no rule places becomes a reference table (logged),
    the safe default for the small global tables a new feature adds."""
    placed: dict[str, Placement] = {}
    for table in tables:
        try:
            placed[table.name] = place(table)
        except Unclassified as exc:
            log.warning("%s; made a reference table", exc)
            placed[table.name] = Placement.REFERENCE
    return placed


async def installed(conn: asyncpg.Connection) -> bool:
    """Whether the database has the citus extension."""
    return bool(await conn.fetchval("SELECT true FROM pg_extension WHERE extname = 'citus'"))


async def tables(conn: asyncpg.Connection) -> list[Table]:
    """The schema's tables (public), with their columns."""
    records = await conn.fetch(
        """SELECT c.relname AS name, array_agg(a.attname::text) AS columns
           FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
           WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
             AND NOT c.relispartition AND a.attnum > 0 AND NOT a.attisdropped
           GROUP BY c.relname ORDER BY c.relname"""
    )
    return [Table(r["name"], frozenset(r["columns"])) for r in records]


async def current_placement(conn: asyncpg.Connection) -> dict[str, Placement]:
    """Where each table of the schema is now: tables Citus does not know, and its "local"
    tables (kept on the coordinator, in its metadata for their foreign keys to reference
    tables: co-location 0), are on the coordinator."""
    records = await conn.fetch(
        """SELECT c.relname AS name,
                  CASE WHEN p.partmethod = 'h' THEN 'distributed'
                       WHEN p.partmethod = 'n' AND p.colocationid <> 0 THEN 'reference'
                  END AS kind
           FROM pg_class c LEFT JOIN pg_dist_partition p ON p.logicalrelid = c.oid
           WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
             AND NOT c.relispartition"""
    )
    kinds = {"distributed": Placement.DISTRIBUTED, "reference": Placement.REFERENCE}
    return {r["name"]: kinds.get(r["kind"], Placement.COORDINATOR) for r in records}


@dataclasses.dataclass(frozen=True)
class _Key:
    table: str
    name: str
    definition: str  # pg_get_constraintdef
    kind: str  # 'p' primary key, 'u' unique, 'f' foreign key
    columns: tuple[str, ...]


async def _keys(conn: asyncpg.Connection, names: list[str]) -> list[_Key]:
    records = await conn.fetch(
        """SELECT c.conrelid::regclass::text AS table, c.conname AS name, c.contype::text AS kind,
                  pg_get_constraintdef(c.oid) AS definition,
                  ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k (n, i)
                        JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n
                        ORDER BY k.i) AS columns
           FROM pg_constraint c
           WHERE c.contype IN ('p', 'u', 'f')
             AND (c.conrelid::regclass::text = ANY($1) OR c.confrelid::regclass::text = ANY($1))
           ORDER BY c.contype DESC, c.conname""",
        names,
    )
    return [
        _Key(r["table"], r["name"], r["definition"], r["kind"], tuple(r["columns"]))
        for r in records
    ]


def _with_state(definition: str) -> str:
    """A PRIMARY KEY/UNIQUE (a, b) definition with state_id first: `... (state_id, a, b)`."""
    head, _, rest = definition.partition("(")
    return f"{head}({DISTRIBUTION_COLUMN}, {rest}"


def _foreign_with_state(definition: str) -> str:
    """FOREIGN KEY (a) REFERENCES t(b) ... as FOREIGN KEY (state_id, a) REFERENCES
    t(state_id, b) ...: a reference between two distributed tables stays within a state."""
    local, _, rest = definition.partition(" REFERENCES ")
    table, _, remote = rest.partition("(")
    return f"{_with_state(local)} REFERENCES {table}({DISTRIBUTION_COLUMN}, {remote}"


async def distribute(conn: asyncpg.Connection, *, create_extension: bool = False) -> list[str]:
    """Distributes what is not yet distributed (nothing when all is): returns what it did,
    a line each. With `create_extension`, creates the citus extension first."""
    if create_extension:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS citus")
    target = layout(await tables(conn))
    now = await current_placement(conn)
    todo = {name: p for name, p in target.items() if p != now.get(name, Placement.COORDINATOR)}
    done: list[str] = []
    if not todo:
        return done
    distributed = {name for name, p in target.items() if p is Placement.DISTRIBUTED}
    # A distributed table's row triggers fire on its shards (configured_versions' forgets
    # the version's configured_edges, a co-located shard): Citus distributes a table with
    # triggers only when told that they are safe there.
    await conn.execute("SET citus.enable_unsafe_triggers TO on")
    keys = await _keys(conn, sorted(todo))
    foreign = [k for k in keys if k.kind == "f"]
    # Foreign keys are dropped while their tables move and made again after, each kept
    # within a state where it joins two distributed tables.
    for key in foreign:
        await conn.execute(f'ALTER TABLE {key.table} DROP CONSTRAINT "{key.name}"')
    for key in keys:
        if (
            key.kind in "pu"
            and key.table in distributed
            and key.table in todo
            and DISTRIBUTION_COLUMN not in key.columns
        ):
            await conn.execute(
                f'ALTER TABLE {key.table} DROP CONSTRAINT "{key.name}", '
                f'ADD CONSTRAINT "{key.name}" {_with_state(key.definition)}'
            )
            done.append(f"{key.table}: {key.name} is now {_with_state(key.definition)}")
    for name in sorted(todo):
        if todo[name] is Placement.REFERENCE:
            await conn.execute("SELECT create_reference_table($1)", name)
            done.append(f"{name}: reference table")
    anchored = now.get(ANCHOR) is Placement.DISTRIBUTED
    for name in sorted(todo, key=lambda n: n != ANCHOR):
        if todo[name] is not Placement.DISTRIBUTED:
            continue
        if anchored:
            await conn.execute(
                "SELECT create_distributed_table($1, $2, colocate_with => $3)",
                name,
                DISTRIBUTION_COLUMN,
                ANCHOR,
            )
        else:
            await conn.execute("SELECT create_distributed_table($1, $2)", name, DISTRIBUTION_COLUMN)
            anchored = True
        done.append(f"{name}: distributed by {DISTRIBUTION_COLUMN}, co-located with {ANCHOR}")
    for key in foreign:
        definition = key.definition
        if (
            key.table in distributed
            and _references(key) in distributed
            and DISTRIBUTION_COLUMN not in key.columns  # (state_id, serial) is kept as it is
        ):
            definition = _foreign_with_state(definition)
            done.append(f"{key.table}: {key.name} is now {definition}")
        await conn.execute(f'ALTER TABLE {key.table} ADD CONSTRAINT "{key.name}" {definition}')
    done.extend(await _distribute_functions(conn))
    return done


def _references(key: _Key) -> str:
    return key.definition.partition(" REFERENCES ")[2].partition("(")[0].strip()


async def _distribute_functions(conn: asyncpg.Connection) -> list[str]:
    """The schema's functions known to the workers (statements pushed to a shard call
    them: may_read, ...)."""
    names = await conn.fetch(
        """SELECT p.oid::regprocedure::text AS signature FROM pg_proc p
           WHERE p.pronamespace = 'public'::regnamespace
             AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
             AND NOT EXISTS (SELECT FROM pg_dist_object o
                             WHERE o.classid = 'pg_proc'::regclass AND o.objid = p.oid)
           ORDER BY 1"""
    )
    done = []
    for r in names:
        await conn.execute("SELECT create_distributed_function($1)", r["signature"])
        done.append(f"function {r['signature']}: known to the workers")
    return done
