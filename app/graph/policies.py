"""Policies: saved checks of resource attributes, evaluated by PostgreSQL on every write.

A policy covers resources by globs (`*` any run, `?` one character): a type glob, and
optionally a state-name glob and a provider glob. Its condition marks a VIOLATION: a
SQL/JSON path predicate over a resource's `attributes` (`$.acl == "public-read"`,
`!exists($.tags.owner)`), evaluated in PostgreSQL with `@@` (migration 0011).

- A write (Terraform POST, import, IaC apply: all go through `write_version`)
  evaluates the policies covering its state over the rows it inserted (instances added
  or changed), never the whole state; a violation at an address the write touched
  (inserted or closed a row) that no longer holds is resolved at the write's serial.
- A new or changed policy is evaluated once over the current version of every state.
- A violation is open from the serial it was first seen at to the serial that resolved
  it, as graph rows follow versions; `policy-violated` and `policy-resolved` events say
  what each evaluation opened and resolved.

Sensitive values are never read by a condition: it evaluates over the attributes with
every value at a `sensitive_attributes` path replaced by null (what readers see;
migration 0011's `policy_view`), so no wildcard reaches one either; and a condition
that NAMES a sensitive path is refused when it is made: see `SECRET_WORDS` and
`_refuse_sensitive`.
"""

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from app.errors import BadInput, Conflict, NotFound
from app.graph.queries import STATE_COLUMNS
from app.paging import ALL, Keyset, Page, paged_sql, single_page


class Severity(enum.Enum):
    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"


@dataclass(frozen=True)
class PolicySpec:
    name: str
    resource_type: str  # glob over resource types
    condition: str  # a SQL/JSON path predicate over attributes
    severity: Severity = Severity.WARNING
    description: str = ""
    states: str | None = None  # glob over state names; None: every state
    provider: str | None = None  # glob over provider addresses; None: any
    enforce: bool = False  # IaC applies that would open a violation are refused


# The fields whose change evaluates a policy again; the fields that may be None.
_SCOPE_FIELDS = {"resource_type", "condition", "states", "provider"}
_OPTIONAL_FIELDS = {"states", "provider"}


@dataclass(frozen=True)
class Finding:
    """A violation an evaluation opened (or resolved), or an IaC plan would open."""

    policy: str
    severity: str
    enforce: bool
    state: str
    address: str
    opened: bool = True


class PolicyViolation(Conflict):
    """An IaC apply that would open violations of enforced policies; `detail` lists them."""

    code = "POLICY_VIOLATION"


# Key names whose values are secrets whatever a state marks: a condition naming a key
# whose lower-cased name contains one of these is refused.
SECRET_WORDS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "private_key",
    "api_key",
    "credential",
)


POLICY_COLUMNS = """pol.id AS policy_id, pol.name AS policy_name,
    pol.description AS policy_description, pol.severity AS policy_severity,
    pol.resource_type AS policy_resource_type, pol.states AS policy_states,
    pol.provider AS policy_provider, pol.condition AS policy_condition,
    pol.enforce AS policy_enforce, pol.created_by AS policy_created_by,
    pol.created_at AS policy_created_at, pol.updated_at AS policy_updated_at"""
POLICY_KEY = Keyset(("policy_name",), (str,))


# --- conditions -----------------------------------------------------------------------


def named_keys(canonical: str) -> list[str]:
    """The keys a path names: its `."key"` accessors, filters included. `canonical` is
    PostgreSQL's text of the parsed path, where every key is quoted and comes right
    after a dot, and no other string does (literals follow spaces or parentheses)."""
    keys = []
    i = 0
    while i < len(canonical):
        if canonical[i] != '"':
            i += 1
            continue
        end = i + 1
        while canonical[end] != '"':
            end += 2 if canonical[end] == "\\" else 1
        if i > 0 and canonical[i - 1] == ".":
            keys.append(json.loads(canonical[i : end + 1]))
        i = end + 1
    return keys


def secret_like(key: str) -> bool:
    lowered = key.lower()
    return any(word in lowered for word in SECRET_WORDS)


async def _parse_condition(conn: asyncpg.Connection, condition: str) -> str:
    """PostgreSQL's canonical text of the condition, once it has parsed it and evaluated
    it on `{}` (a predicate gives true, false or null; anything else is refused)."""
    try:
        canonical: str = await conn.fetchval(
            "SELECT $1::jsonpath::text FROM jsonb_path_match('{}', $1::jsonpath) AS sample",
            condition,
        )
    except asyncpg.PostgresSyntaxError as exc:  # the message names the position
        raise BadInput(
            f"invalid condition: {exc.message}", {"condition": condition, "error": exc.message}
        ) from None
    except asyncpg.SingletonSQLJsonItemRequiredError as exc:
        raise BadInput(
            "invalid condition: it must be a predicate, true or false for each resource "
            '(a comparison such as $.acl == "public-read", exists(...), like_regex, '
            f"starts with, is unknown, or those joined by &&, ||, !): {exc.message}",
            {"condition": condition, "error": exc.message},
        ) from None
    except (asyncpg.DataError, asyncpg.UndefinedObjectError) as exc:
        raise BadInput(
            f"invalid condition: {exc.message}", {"condition": condition, "error": exc.message}
        ) from None
    return canonical


async def _refuse_sensitive(conn: asyncpg.Connection, spec: PolicySpec, canonical: str) -> None:
    """Refuse a condition that names a sensitive path: one of the keys it names (every
    `.key` accessor, filters included) looks like a secret (SECRET_WORDS), or is the key
    of a value a current instance it covers marks sensitive: the last attribute name or
    map key of one of that instance's `sensitive_attributes` paths."""
    keys = sorted(set(named_keys(canonical)))
    secret = [key for key in keys if secret_like(key)]
    if secret:
        raise BadInput(
            f"the condition names {secret[0]!r}, a key named like a secret: a policy never "
            "reads sensitive values",
            {"condition": spec.condition, "keys": secret},
        )
    if not keys:
        return
    found = await conn.fetchrow(
        """SELECT k.key, s.name AS state_name, r.address
           FROM states s
           JOIN resources r ON r.state_id = s.id AND r.serial_to IS NULL
           CROSS JOIN LATERAL unnest(sensitive_keys(r.sensitive_attributes)) AS k (key)
           WHERE s.name LIKE coalesce(glob_like($1), '%') AND r.type LIKE glob_like($2)
             AND r.provider LIKE coalesce(glob_like($3), '%')
             AND r.sensitive_attributes <> '[]' AND k.key = ANY($4::text[])
           LIMIT 1""",
        spec.states,
        spec.resource_type,
        spec.provider,
        keys,
    )
    if found is not None:
        raise BadInput(
            f"the condition names {found['key']!r}, which {found['address']} in state "
            f"{found['state_name']} marks sensitive: a policy never reads sensitive values",
            {"condition": spec.condition, "keys": [found["key"]]},
        )


async def _check(conn: asyncpg.Connection, spec: PolicySpec) -> None:
    if not spec.name.strip():
        raise BadInput("a policy needs a name")
    if not spec.resource_type:
        raise BadInput('a policy needs a resource type glob ("*" for every type)')
    canonical = await _parse_condition(conn, spec.condition)
    await _refuse_sensitive(conn, spec, canonical)


# --- evaluation -------------------------------------------------------------------------

# Policy changes and writes exclude each other (a transaction-level advisory lock,
# exclusive for a change, shared by writes): a write evaluates the policies committed
# before it, and a policy evaluates the writes committed before it; none is missed.
_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('infragraph:policies', 0))"
_SHARED_LOCK = "SELECT pg_advisory_xact_lock_shared(hashtextextended('infragraph:policies', 0))"
_COVERED = "SELECT EXISTS (SELECT FROM policies WHERE $1 LIKE states_like)"
_OPEN_VIOLATIONS = """SELECT EXISTS (SELECT FROM policy_violations
                                     WHERE state_id = $1 AND serial_to IS NULL)"""


# Given `hits (state_id, policy_id, address, serial)`, the violations that hold, and
# `stale (id, state_id, serial)`, the open ones that no longer do: resolve the stale,
# open the hits not open yet, log both as events (one per state, policy and kind, with
# the first 100 addresses), return them. `$actor` is the caller's parameter.
_RECORD = """,
resolved AS (
    UPDATE policy_violations pv SET serial_to = stale.serial, resolved_at = now(),
        resolved_by = {actor}
    FROM stale WHERE pv.state_id = {state} AND pv.state_id = stale.state_id AND pv.id = stale.id
    RETURNING pv.state_id, pv.policy_id, pv.address, pv.serial_to AS serial),
opened AS (
    INSERT INTO policy_violations (state_id, policy_id, address, serial_from, opened_by)
    SELECT h.state_id, h.policy_id, h.address, h.serial, {actor} FROM hits h
    ON CONFLICT (state_id, address, policy_id) WHERE serial_to IS NULL DO NOTHING  -- open
    RETURNING state_id, policy_id, address, serial_from AS serial),
changes AS (
    SELECT true AS opened, * FROM opened UNION ALL SELECT false, * FROM resolved),
logged AS (
    INSERT INTO events (state_id, state_name, action, actor, serial, detail)
    SELECT c.state_id, s.name, CASE WHEN c.opened THEN 'policy-violated' ELSE 'policy-resolved' END,
           {actor}, max(c.serial),
           jsonb_build_object('policy', pol.name, 'severity', pol.severity,
                              'enforce', pol.enforce, 'count', count(*),
                              'addresses', (array_agg(c.address ORDER BY c.address))[1:100])
    FROM changes c JOIN states s ON s.id = c.state_id JOIN policies pol ON pol.id = c.policy_id
    GROUP BY c.opened, c.state_id, s.name, pol.name, pol.severity, pol.enforce)
SELECT c.opened, c.address, s.name AS state_name, pol.name AS policy, pol.severity, pol.enforce
FROM changes c JOIN states s ON s.id = c.state_id JOIN policies pol ON pol.id = c.policy_id
ORDER BY s.name, c.address, pol.name"""


def _recorded(evaluation: str, *, actor: str, state: str) -> str:
    """`evaluation` (CTEs `hits` and `stale`, of the one state `state`) followed by
    `_RECORD`."""
    return evaluation + _RECORD.format(actor=actor, state=state)


# One write: the policies covering the state, over the rows it inserted ($4); open
# violations at the addresses of the rows it inserted or closed ($5) may resolve.
_CHECK_WRITE = _recorded(
    """WITH pol AS (
    SELECT id, path, type_like, provider_like FROM policies WHERE $2 LIKE states_like),
inserted AS MATERIALIZED (  -- each row's view once, whatever the number of policies
    SELECT r.state_id, r.address, r.type, r.provider,
           policy_view(r.attributes, r.sensitive_attributes) AS viewed
    FROM resources r WHERE r.state_id = $1 AND r.id = ANY($4::uuid[])),
hits AS (
    SELECT r.state_id, pol.id AS policy_id, r.address, $3::bigint AS serial
    FROM inserted r JOIN pol ON r.type LIKE pol.type_like AND r.provider LIKE pol.provider_like
    WHERE r.viewed @@ pol.path),
stale AS (
    SELECT pv.id, pv.state_id, $3::bigint AS serial
    FROM (SELECT DISTINCT address FROM resources
          WHERE state_id = $1 AND id = ANY($4::uuid[] || $5::uuid[])) touched
    CROSS JOIN LATERAL (
        SELECT v.id, v.state_id, v.policy_id, v.address FROM policy_violations v
        WHERE v.state_id = $1 AND v.address = touched.address AND v.serial_to IS NULL
        OFFSET 0) pv  -- probed by address, whatever the estimates of a young table
    WHERE NOT EXISTS (SELECT 1 FROM hits h
                      WHERE h.policy_id = pv.policy_id AND h.address = pv.address))""",
    actor="$6",
    state="$1",
)

# One policy ($1) over the current version (serial $4) of one state ($3): its open
# violations there that no longer hold resolve at that serial. The server runs it state by
# state (check_policy), so that each statement stays on its state's shard on Citus.
_CHECK_POLICY = _recorded(
    """WITH pol AS (
    SELECT p.id, p.path, p.type_like, p.provider_like FROM policies p
    JOIN states s ON s.id = $3 AND s.name LIKE p.states_like WHERE p.id = $1),
hits AS (
    SELECT r.state_id, pol.id AS policy_id, r.address, $4::bigint AS serial
    FROM pol CROSS JOIN resources r
    WHERE r.state_id = $3 AND r.serial_to IS NULL
      AND r.type LIKE pol.type_like AND r.provider LIKE pol.provider_like
      AND policy_view(r.attributes, r.sensitive_attributes) @@ pol.path),
stale AS (
    SELECT pv.id, pv.state_id, $4::bigint AS serial
    FROM policy_violations pv
    WHERE state_id = $3 AND pv.policy_id = $1 AND pv.serial_to IS NULL
      AND NOT EXISTS (SELECT 1 FROM hits h WHERE h.address = pv.address))""",
    actor="$2",
    state="$3",
)
# The states a policy ($1) is to be checked on: those it covers, and those where it has
# open violations; each with its current serial.
_POLICY_STATES = """
    SELECT s.id AS state_id, s.current_serial AS serial
    FROM policies p JOIN states s ON s.name LIKE p.states_like
    WHERE p.id = $1 AND s.current_serial IS NOT NULL"""
_VIOLATED_STATES = """
    SELECT DISTINCT s.id AS state_id, s.current_serial AS serial
    FROM states s JOIN policy_violations pv ON pv.state_id = s.id
    WHERE pv.policy_id = $1 AND pv.serial_to IS NULL AND s.current_serial IS NOT NULL"""


async def check_policy(conn: asyncpg.Connection, policy_id: UUID, actor: str) -> None:
    """Evaluates a policy over the current version of every state it covers, one state at
    a time (in the caller's transaction, under the policies' lock)."""
    states = {
        r["state_id"]: r["serial"]
        for sql in (_POLICY_STATES, _VIOLATED_STATES)
        for r in await conn.fetch(sql, policy_id)
    }
    for state_id, serial in sorted(states.items()):
        await conn.fetch(_CHECK_POLICY, policy_id, actor, state_id, serial)


def _findings(records: Sequence[asyncpg.Record]) -> list[Finding]:
    return [
        Finding(
            r["policy"], r["severity"], r["enforce"], r["state_name"], r["address"], r["opened"]
        )
        for r in records
    ]


async def check_write(
    conn: asyncpg.Connection,
    state_id: UUID,
    state_name: str,
    serial: int,
    *,
    inserted: Sequence[UUID],
    closed: Sequence[UUID],
    actor: str,
) -> list[Finding]:
    """Evaluate the policies covering a state over the rows a write inserted, resolve
    the violations at addresses it touched that no longer hold; the caller's transaction."""
    if not inserted and not closed:
        return []
    await conn.execute(_SHARED_LOCK)
    # under the lock, no policy is made before this transaction ends: with none covering
    # the state and no violation open in it, the write opens and resolves nothing
    if not await conn.fetchval(_COVERED, state_name) and not await conn.fetchval(
        _OPEN_VIOLATIONS, state_id
    ):
        return []
    records = await conn.fetch(
        _CHECK_WRITE, state_id, state_name, serial, list(inserted), list(closed), actor
    )
    return _findings(records)


def refuse_enforced(findings: Sequence[Finding]) -> None:
    """PolicyViolation when `findings` open a violation of an enforced policy."""
    enforced = [f for f in findings if f.opened and f.enforce]
    if enforced:
        listed = "; ".join(f"{f.address} violates {f.policy} ({f.severity})" for f in enforced)
        raise PolicyViolation(
            f"refused by enforced policies: {listed}",
            {
                "violations": [
                    {
                        "policy": f.policy,
                        "severity": f.severity,
                        "state": f.state,
                        "address": f.address,
                    }
                    for f in enforced
                ]
            },
        )


# --- management -------------------------------------------------------------------------


async def _locked_row(conn: asyncpg.Connection, name: str) -> asyncpg.Record:
    record = await conn.fetchrow(
        f"SELECT {POLICY_COLUMNS} FROM policies pol WHERE pol.name = $1", name
    )
    if record is None:
        raise NotFound(f"no policy {name!r}")
    return record


async def create_policy(
    conn: asyncpg.Connection, spec: PolicySpec, *, actor: str
) -> asyncpg.Record:
    """Store a policy and evaluate it over every current version (its violations open)."""
    await _check(conn, spec)
    async with conn.transaction():
        await conn.execute(_LOCK)
        policy_id = await conn.fetchval(
            """INSERT INTO policies (name, description, severity, resource_type, states,
                                     provider, condition, enforce, created_by)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
               ON CONFLICT (name) DO NOTHING RETURNING id""",
            spec.name,
            spec.description,
            spec.severity.value,
            spec.resource_type,
            spec.states,
            spec.provider,
            spec.condition,
            spec.enforce,
            actor,
        )
        if policy_id is None:
            raise Conflict(f"a policy named {spec.name!r} exists", {"name": spec.name})
        await check_policy(conn, policy_id, actor)
        return await _locked_row(conn, spec.name)


def _spec_of(record: asyncpg.Record) -> PolicySpec:
    return PolicySpec(
        name=record["policy_name"],
        resource_type=record["policy_resource_type"],
        condition=record["policy_condition"],
        severity=Severity(record["policy_severity"]),
        description=record["policy_description"],
        states=record["policy_states"],
        provider=record["policy_provider"],
        enforce=record["policy_enforce"],
    )


async def update_policy(
    conn: asyncpg.Connection, name: str, changes: Mapping[str, Any], *, actor: str
) -> asyncpg.Record:
    """Change fields of a policy (`changes`: PolicySpec field -> value; not its name). A
    change of what it covers or of its condition evaluates it again over every current
    version: what no longer holds resolves at its state's current serial, what newly
    holds opens there."""
    async with conn.transaction():
        await conn.execute(_LOCK)
        record = await _locked_row(conn, name)
        for field, value in changes.items():
            if value is None and field not in _OPTIONAL_FIELDS:
                raise BadInput(f"a policy's {field} cannot be null", {"field": field})
        old = _spec_of(record)
        new = PolicySpec(**{**old.__dict__, **changes, "name": name})
        await _check(conn, new)
        await conn.execute(
            """UPDATE policies SET description = $2, severity = $3, resource_type = $4,
                   states = $5, provider = $6, condition = $7, enforce = $8, updated_at = now()
               WHERE id = $1""",
            record["policy_id"],
            new.description,
            new.severity.value,
            new.resource_type,
            new.states,
            new.provider,
            new.condition,
            new.enforce,
        )
        if any(getattr(new, f) != getattr(old, f) for f in _SCOPE_FIELDS):
            await check_policy(conn, record["policy_id"], actor)
        return await _locked_row(conn, name)


async def delete_policy(conn: asyncpg.Connection, name: str) -> asyncpg.Record:
    """Delete a policy and its violations (open and resolved); returns it as it was."""
    async with conn.transaction():
        await conn.execute(_LOCK)
        record = await _locked_row(conn, name)
        await conn.execute(
            """WITH gone AS (DELETE FROM policy_violations pv
                             USING states s WHERE s.id = pv.state_id AND pv.policy_id = $1)
               DELETE FROM policies WHERE id = $1""",
            record["policy_id"],
        )
    return record


async def list_policies(
    conn: asyncpg.Connection, *, first: int, after: tuple[str] | None = None
) -> Page[asyncpg.Record]:
    """Policies by name (byte order)."""
    sql = paged_sql(
        f"""SELECT {ALL} AS owner, pol.id, pol.name COLLATE "C" AS policy_name
            FROM policies pol""",
        order="policy_name",
        after="($1::text IS NULL OR policy_name > $1)",
        limit="$2",
        select=POLICY_COLUMNS,
        joins="LEFT JOIN policies pol ON pol.id = p.id",
    )
    records = await conn.fetch(sql, after and after[0], first + 1)
    return single_page(records, first, POLICY_KEY)


# --- violations -------------------------------------------------------------------------

VIOLATION_KEY = Keyset(
    ("state_name", "address", "policy_name", "serial_from"), (str, str, str, int)
)


async def list_violations(
    conn: asyncpg.Connection,
    *,
    state: str | None,
    policy: str | None,
    open: bool | None,
    first: int,
    after: tuple[str, str, str, int] | None = None,
    readable: list[str] | None = None,
) -> Page[asyncpg.Record]:
    """Violations by state name, address, policy name and first serial; of one state
    and/or policy; open only (`open` true), resolved only (false) or all (None); of the
    states `readable` lets a caller see (app.access)."""
    sql = paged_sql(
        f"""SELECT {ALL} AS owner, pv.id, s.name COLLATE "C" AS state_name,
                   pv.address COLLATE "C" AS address, pol.name COLLATE "C" AS policy_name,
                   pv.serial_from
            FROM policy_violations pv JOIN states s ON s.id = pv.state_id
            JOIN policies pol ON pol.id = pv.policy_id
            WHERE ($1::text IS NULL OR s.name = $1) AND ($2::text IS NULL OR pol.name = $2)
              AND ($3::boolean IS NULL OR (pv.serial_to IS NULL) = $3)
              AND may_read(s.name, $9::text[])""",
        order="state_name, address, policy_name, serial_from",
        after="""($4::text IS NULL OR (state_name, address, policy_name, serial_from)
                  > ($4, $5::text, $6::text, $7::bigint))""",
        limit="$8",
        select=f"""pv.address, pv.serial_from, pv.serial_to, pv.opened_at, pv.opened_by,
                   pv.resolved_at, pv.resolved_by, {POLICY_COLUMNS}, {STATE_COLUMNS}""",
        joins="""LEFT JOIN policy_violations pv ON pv.id = p.id
                 LEFT JOIN policies pol ON pol.id = pv.policy_id
                 LEFT JOIN states s ON s.id = pv.state_id""",
        owner=str(ALL),
    )
    cursor = after or (None, None, None, None)
    records = await conn.fetch(sql, state, policy, open, *cursor, first + 1, readable)
    return single_page(records, first, VIOLATION_KEY)
