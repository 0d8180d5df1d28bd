"""Resource listing and search: current versions of all states, or given versions."""

import enum
from collections.abc import Mapping, Sequence
from dataclasses import astuple, dataclass
from typing import Any, TypeVar
from uuid import UUID

import asyncpg

from app.errors import BadInput, NotFound
from app.graph import shards
from app.graph.links import hides_linked_outputs, sensitive_attributes
from app.graph.queries import CURRENT_VERSION, STATE_COLUMNS, VERSION_COLUMNS, valid_at
from app.graph.sensitive import is_index, sensitive_paths, withhold
from app.paging import ALL, Keyset, Page, paged_sql, pages_by_owner, single_page


class Mode(enum.Enum):
    MANAGED = "managed"
    DATA = "data"


@dataclass(frozen=True)
class ResourceFilter:
    state: str | None = None
    type: str | None = None
    provider: str | None = None
    module: str | None = None  # "" is the root module
    mode: Mode | None = None
    address: str | None = None
    address_prefix: str | None = None
    # the state-name patterns a caller may read (app.access.Principal.patterns); None: all
    readable: tuple[str, ...] | None = None
    attributes: Any = None  # a JSON object the attributes must contain (`@>`, GIN)

    def __hash__(self) -> int:
        # Keys of per-request loaders; the attributes (a dict) only take part in equality.
        return hash(astuple(self)[:-1])


NO_FILTER = ResourceFilter()

# A resource row is shared by the versions of its serial range (migration 0005), so a
# resource is always read at a version: (row id, version id) is its key.
ResourceKey = tuple[UUID, UUID]

# The columns of a resource row but its JSONB ones. Its attributes are about 1 KB each,
# which a page of a thousand rows decodes only when the query selects them (attributes_of
# loads them for rows read without); its small JSONB columns (JSON_COLUMNS) cost a page
# more to decode (a Python call each) than all the others, and a page that shows neither
# (nor the attributes, which they mask) reads without them too.
ROW_COLUMNS = """r.id, r.address, r.mode, r.type, r.name, r.provider, r.module_path,
    r.each, r.deposed, r.status"""


def json_columns(state: str | None = None) -> str:
    """JSON_COLUMNS; `state`: the rows' state id where the statement names it (one state)."""
    return f"r.index_key, {sensitive_attributes('r', state)} AS sensitive_attributes"


def resource_columns(state: str | None = None) -> str:
    """RESOURCE_COLUMNS; `state` as json_columns'."""
    return f"{ROW_COLUMNS}, {json_columns(state)}, r.attributes, {VERSION_COLUMNS}, {STATE_COLUMNS}"


def row_join(state: str = "p.state_id") -> str:
    """ROW_JOIN; `state`: the page's state id where the statement names it."""
    return f"LEFT JOIN resources r ON r.id = p.id AND r.state_id = {state}"


def resource_joins(state: str = "p.state_id") -> str:
    """RESOURCE_JOINS; `state` as row_join's."""
    return f"""{row_join(state)}
    LEFT JOIN state_versions v ON v.id = p.version_id AND v.state_id = {state}
    LEFT JOIN states s ON s.id = v.state_id"""


JSON_COLUMNS = json_columns()
# The columns of a resource row, with its version's and state's (see queries.py).
RESOURCE_COLUMNS = resource_columns()
# Joins a page `p` (with `id` and `state_id` columns) to ROW_COLUMNS.
ROW_JOIN = row_join()
# Joins a page `p` (with `id`, `state_id` and `version_id` columns) to RESOURCE_COLUMNS.
RESOURCE_JOINS = resource_joins()
# The current version of every state (the `state_versions (state_id, serial DESC)` index);
# the rows still open (serial_to NULL) are exactly the current version's.
CURRENT_SCOPE = f"""states s
    JOIN {CURRENT_VERSION}
    JOIN resources r ON r.state_id = v.state_id AND r.serial_to IS NULL"""
# Versions `v` given by the statement, their rows by serial range.
VERSION_SCOPE = f"""state_versions v JOIN states s ON s.id = v.state_id
    JOIN resources r ON {valid_at("r", "v.state_id", "v.serial")}"""

T = TypeVar("T")

# The resources a statement starts from, `k`: (row id, version id) pairs ($1, $2) and
# their 1-based position `ord`, each at its version `kv`. A page's owner is `ord`.
KEYS_AT_VERSIONS = """unnest($1::uuid[], $2::uuid[]) WITH ORDINALITY AS k (id, version_id, ord)
    JOIN state_versions kv ON kv.id = k.version_id"""


def keys_at_versions(state: str) -> str:
    """KEYS_AT_VERSIONS of one state, whose id is `state` (app/graph/shards.py)."""
    return f"{KEYS_AT_VERSIONS} AND kv.state_id = {state}"


def key_arrays(keys: Sequence[ResourceKey]) -> tuple[list[UUID], list[UUID]]:
    """The row ids and version ids of `keys`: the two arrays of KEYS_AT_VERSIONS."""
    return [row_id for row_id, _ in keys], [version_id for _, version_id in keys]


def by_key(owned: Mapping[int, T], keys: Sequence[ResourceKey]) -> dict[ResourceKey, T]:
    """Values owned by KEYS_AT_VERSIONS positions, by the keys they stand for."""
    return {keys[ord - 1]: value for ord, value in owned.items()}


RESOURCE_KEY = Keyset(("state_name", "address"), (str, str))


class Params(list[Any]):
    """Positional SQL parameters of a statement built from optional parts."""

    def __call__(self, value: Any) -> str:
        self.append(value)
        return f"${len(self)}"


def filter_conditions(f: ResourceFilter, arg: Params) -> str:
    """SQL conditions on `r` and `s` for a filter (`true` for none)."""
    conditions = []
    if f.state is not None:
        conditions.append(f"s.name = {arg(f.state)}")
    if f.readable is not None:
        conditions.append(f"may_read(s.name, {arg(list(f.readable))}::text[])")
    if f.type is not None:
        conditions.append(f"r.type = {arg(f.type)}")
    if f.provider is not None:
        conditions.append(f"r.provider = {arg(f.provider)}")
    if f.module == "":
        conditions.append("r.module_path IS NULL")
    elif f.module is not None:
        conditions.append(f"r.module_path = {arg(f.module)}")
    if f.mode is not None:
        conditions.append(f"r.mode = {arg(f.mode.value)}")
    if f.address is not None:
        conditions.append(f"r.address = {arg(f.address)}")
    if f.address_prefix is not None:
        conditions.append(f"starts_with(r.address, {arg(f.address_prefix)})")
    if f.attributes is not None:
        if not isinstance(f.attributes, dict):
            raise BadInput(
                "the attributes filter must be a JSON object (the attributes must contain it)",
                {"attributes": f.attributes},
            )
        conditions.append(f"r.attributes @> {arg(f.attributes)}::jsonb")
        if "outputs" in f.attributes:  # sensitive in a producer: never matched
            conditions.append(f"NOT {hides_linked_outputs('r')}")
    return " AND ".join(conditions) or "true"


async def _resources(
    conn: asyncpg.Connection,
    *,
    owner: str,
    scope: str,
    where: str,
    arg: Params,
    f: ResourceFilter,
    first: int,
    after: tuple[str, str] | None,
    single: bool = False,
    count: bool = True,
    state: UUID | None = None,
) -> list[asyncpg.Record]:
    """The page(s); `state`: the one state the rows are of, named to each table."""
    conditions = filter_conditions(f, arg)
    pin = arg(state) if state is not None else None
    if pin is not None:
        where = f"{where} AND s.id = {pin} AND v.state_id = {pin} AND r.state_id = {pin}"
    cursor = f"(state_name, address) > ({arg(after[0])}, {arg(after[1])})" if after else "true"
    sql = paged_sql(
        f"""SELECT {owner} AS owner, r.id, r.state_id, v.id AS version_id,
                   s.name COLLATE "C" AS state_name, r.address COLLATE "C" AS address
            FROM {scope} WHERE {where} AND {conditions}""",
        order="state_name, address",
        after=cursor,
        limit=arg(first + 1),
        select=resource_columns(pin),
        joins=resource_joins(pin or "p.state_id"),
        owner=owner if single else None,
        count=count,
    )
    records = await conn.fetch(sql, *arg)
    shards.remember_rows(r for r in records if r["rn"] is not None)
    return records


async def search_resources(
    conn: asyncpg.Connection,
    f: ResourceFilter = NO_FILTER,
    *,
    first: int,
    after: tuple[str, str] | None = None,
    count: bool = True,
) -> Page[asyncpg.Record]:
    """Resources of the current version of every state (or of `f.state`), by state and
    address; `count=False` leaves the page's total uncounted (None), a pass over every
    resource matched saved. Of one state (`f.state`): on its shard alone."""
    state = None
    if not shards.sharded(conn):
        pass  # one statement: the state joined by its name
    elif f.state is not None:
        state = await conn.fetchval("SELECT id FROM states WHERE name = $1", f.state)
        if state is None:
            return Page([], [], 0 if count else None, False)
    else:
        return await _search_shards(conn, f, first=first, after=after, count=count)
    records = await _resources(
        conn,
        owner=str(ALL),
        scope=CURRENT_SCOPE,
        where="true",
        arg=Params(),
        f=f,
        first=first,
        after=after,
        single=True,
        count=count,
        state=state,
    )
    return single_page(records, first, RESOURCE_KEY)


async def _search_shards(
    conn: asyncpg.Connection,
    f: ResourceFilter,
    *,
    first: int,
    after: tuple[str, str] | None,
    count: bool,
) -> Page[asyncpg.Record]:
    """search_resources across states on Citus, in steps: the page's keys (each shard's
    first rows, merged), the total (each shard's count, summed), then the rows (a
    statement per state of the page)."""
    arg = Params()
    conditions = filter_conditions(f, arg)
    total = None
    if count:
        total = await conn.fetchval(
            f"SELECT count(*) FROM {CURRENT_SCOPE} WHERE {conditions}", *arg
        )
    cursor = (
        f"""(s.name COLLATE "C", r.address COLLATE "C") > ({arg(after[0])}, {arg(after[1])})"""
        if after
        else "true"
    )
    keys = await conn.fetch(
        f"""SELECT r.id, r.state_id, v.id AS version_id, s.name COLLATE "C" AS state_name,
                   r.address COLLATE "C" AS address
            FROM {CURRENT_SCOPE} WHERE {conditions} AND {cursor}
            ORDER BY state_name, address LIMIT {arg(first + 1)}""",
        *arg,
    )
    shown = keys[:first]
    shards.remember_rows(shown)
    found = await resources_by_keys(conn, [(k["id"], k["version_id"]) for k in shown])
    return Page(
        [found[(k["id"], k["version_id"])] for k in shown],
        [(k["state_name"], k["address"]) for k in shown],
        total,
        len(keys) > first,
    )


async def version_resources(
    conn: asyncpg.Connection,
    version_ids: list[UUID],
    f: ResourceFilter = NO_FILTER,
    *,
    first: int,
    after: tuple[str, str] | None = None,
) -> dict[UUID, Page[asyncpg.Record]]:
    """Each version's resources, by address (a statement per state)."""

    async def of_state(ids: list[UUID], state: UUID | None) -> dict[UUID, Page[asyncpg.Record]]:
        arg = Params()
        records = await _resources(
            conn,
            owner="v.id",
            scope=VERSION_SCOPE,
            where=f"v.id = ANY({arg(ids)}::uuid[])",
            arg=arg,
            f=f,
            first=first,
            after=after,
            state=state,
        )
        return pages_by_owner(records, first, RESOURCE_KEY)

    return await shards.per_state(conn, version_ids, lambda v: v, of_state)


async def resources_by_keys(
    conn: asyncpg.Connection, keys: list[ResourceKey]
) -> dict[ResourceKey, asyncpg.Record]:
    async def of_state(
        keys: list[ResourceKey], state: UUID | None
    ) -> dict[ResourceKey, asyncpg.Record]:
        at = shards.pin(state, "$3", "v.state_id")
        records = await conn.fetch(
            f"""SELECT {resource_columns("$3" if state is not None else None)}
                FROM unnest($1::uuid[], $2::uuid[]) AS k (id, version_id)
                JOIN state_versions v ON v.id = k.version_id AND v.state_id = {at}
                JOIN states s ON s.id = v.state_id
                JOIN resources r ON r.id = k.id AND {valid_at("r", at, "v.serial")}""",
            *key_arrays(keys),
            *shards.pinned(state),
        )
        return {(r["id"], r["version_id"]): r for r in records}

    return await shards.per_state(conn, keys, lambda k: k[1], of_state)


async def attributes_of(
    conn: asyncpg.Connection, rows: list[tuple[UUID, UUID]]
) -> dict[tuple[UUID, UUID], Any]:
    """The attributes of rows (row id, state id) read without them (a row never changes)."""
    if not shards.sharded(conn):
        records = await conn.fetch(
            """SELECT r.id, r.state_id, r.attributes
               FROM unnest($1::uuid[], $2::uuid[]) AS k (id, state_id)
               JOIN resources r ON r.id = k.id AND r.state_id = k.state_id""",
            [row_id for row_id, _ in rows],
            [state_id for _, state_id in rows],
        )
        return {(r["id"], r["state_id"]): r["attributes"] for r in records}
    found: dict[tuple[UUID, UUID], Any] = {}
    by_state: dict[UUID, list[UUID]] = {}
    for row_id, state_id in rows:
        by_state.setdefault(state_id, []).append(row_id)
    for state_id, ids in by_state.items():  # a statement per state: on its shard
        records = await conn.fetch(
            """SELECT r.id, r.state_id, r.attributes FROM resources r
               WHERE r.state_id = $2 AND r.id = ANY($1::uuid[])""",
            ids,
            state_id,
        )
        found.update({(r["id"], r["state_id"]): r["attributes"] for r in records})
    return found


async def find_resource(
    conn: asyncpg.Connection,
    state: str,
    address: str,
    serial: int | None = None,
    *,
    readable: list[str] | None = None,
) -> asyncpg.Record:
    """The resource at `address` in state `state` (current version, or at `serial`), of
    a state `readable` lets the caller see (app.access): else NotFound, as if absent."""
    if not shards.sharded(conn):
        record = await conn.fetchrow(
            f"""SELECT {RESOURCE_COLUMNS}
                FROM (SELECT v2.id FROM states s2 JOIN state_versions v2 ON v2.state_id = s2.id
                      WHERE s2.name = $1 AND ($3::bigint IS NULL OR v2.serial = $3)
                        AND may_read(s2.name, $4::text[])
                      ORDER BY v2.serial DESC LIMIT 1) k
                JOIN state_versions v ON v.id = k.id JOIN states s ON s.id = v.state_id
                JOIN resources r ON {valid_at("r", "v.state_id", "v.serial")}
                                AND r.address = $2""",
            state,
            address,
            serial,
            readable,
        )
        if record is None:
            at = f" at serial {serial}" if serial is not None else ""
            raise NotFound(f"no resource {address!r} in state {state!r}{at}")
        return record
    # on Citus the state first (a reference table: read where the statement is), then
    # the row, on the state's shard
    found = await conn.fetchrow(
        "SELECT id, current_serial FROM states WHERE name = $1 AND may_read(name, $2::text[])",
        state,
        readable,
    )
    record = None
    if found is not None and found["current_serial"] is not None:
        record = await conn.fetchrow(
            f"""SELECT {resource_columns("$1")}
                FROM state_versions v JOIN states s ON s.id = v.state_id
                JOIN resources r ON {valid_at("r", "$1", "v.serial")} AND r.address = $2
                WHERE v.state_id = $1 AND v.serial = $3""",
            found["id"],
            address,
            found["current_serial"] if serial is None else serial,
        )
    if record is not None:
        shards.remember_rows([record])
    if record is None:
        at = f" at serial {serial}" if serial is not None else ""
        raise NotFound(f"no resource {address!r} in state {state!r}{at}")
    return record


def attribute_value(attributes: Any, sensitive_attributes: Any, path: Sequence[str] = ()) -> Any:
    """The attributes, or the value at `path` (object keys; list indexes as strings), with
    the values Terraform marks sensitive withheld (null); null where the path leads nowhere."""
    value = withhold(attributes, sensitive_paths(sensitive_attributes))
    for key in path:
        if isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, list) and is_index(key, value):
            value = value[int(key)]
        else:
            return None
    return value


async def output_sources(
    conn: asyncpg.Connection, version_ids: list[UUID]
) -> dict[UUID, list[asyncpg.Record]]:
    """Each version's output lineage: rows of `output_name`, `path` and the source
    resource (RESOURCE_COLUMNS), by output name, address and path."""

    async def of_state(ids: list[UUID], state: UUID | None) -> dict[UUID, list[asyncpg.Record]]:
        at = shards.pin(state, "$2", "v.state_id")
        columns = resource_columns("$2" if state is not None else None)
        records = await conn.fetch(
            f"""SELECT x.output_name, x.path, {columns}
                FROM state_versions v
                JOIN states s ON s.id = v.state_id
                JOIN output_lineage x ON {valid_at("x", at, "v.serial")}
                JOIN resources r ON r.id = x.resource_id AND r.state_id = {at}
                WHERE v.id = ANY($1::uuid[]) AND v.state_id = {at}
                ORDER BY v.id, x.output_name, r.address COLLATE "C", x.path""",
            ids,
            *shards.pinned(state),
        )
        found: dict[UUID, list[asyncpg.Record]] = {}
        for record in records:
            found.setdefault(record["version_id"], []).append(record)
        return found

    return await shards.per_state(conn, version_ids, lambda v: v, of_state)
