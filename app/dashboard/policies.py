"""The dashboard's policies page (admin): each policy and its open violations by state,
in a fixed number of statements."""

from dataclasses import dataclass

import asyncpg

from app.access import Principal, Role
from app.graph import policies

POLICIES = 200  # a page of policies
VIOLATIONS = 1000  # open violations shown in all (the rest: the GraphQL `violations` field)


@dataclass(frozen=True)
class PolicyEntry:
    policy: asyncpg.Record
    by_state: dict[str, list[asyncpg.Record]]  # its open violations, by state name

    @property
    def open(self) -> int:
        return sum(len(rows) for rows in self.by_state.values())


@dataclass(frozen=True)
class PoliciesPage:
    entries: list[PolicyEntry]
    more_policies: bool
    more_violations: bool  # over VIOLATIONS open: the first VIOLATIONS by state and address


async def policies_page(conn: asyncpg.Connection, caller: Principal) -> PoliciesPage:
    caller.require(Role.ADMIN, "see policies")
    found = await policies.list_policies(conn, first=POLICIES)
    violations = await policies.list_violations(
        conn, state=None, policy=None, open=True, first=VIOLATIONS, readable=caller.patterns
    )
    by_policy: dict[str, dict[str, list[asyncpg.Record]]] = {}
    for v in violations.rows:
        states = by_policy.setdefault(v["policy_name"], {})
        states.setdefault(v["state_name"], []).append(v)
    entries = [PolicyEntry(p, by_policy.get(p["policy_name"], {})) for p in found.rows]
    return PoliciesPage(entries, found.has_next, violations.has_next)
