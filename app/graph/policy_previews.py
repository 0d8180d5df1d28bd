"""What a write would do to the policies before it is written (an IaC plan, a Terraform
plan): the violations it would open and those it would resolve, over planned instances
(address, type, provider, attributes); app/graph/policies.py owns the policies."""

from collections.abc import Mapping, Sequence
from typing import Any

import asyncpg

from app.graph.policies import Finding


async def preview(
    conn: asyncpg.Connection, state_name: str, instances: Sequence[Mapping[str, Any]]
) -> list[Finding]:
    """The violations writing `instances` (address, type, provider, attributes) to state
    `state_name` would open: those that hold and are not open already (a write opens
    them on the rows it adds or changes; an unchanged row's hold already)."""
    records = await conn.fetch(
        """WITH planned AS (
               SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::jsonb[])
                   AS i (address, type, provider, attributes)),
           open AS MATERIALIZED (  -- read on the state's shard, then joined
               SELECT pv.address, pv.policy_id FROM states s
               JOIN policy_violations pv ON pv.state_id = s.id AND pv.serial_to IS NULL
               WHERE s.name = $1)
           SELECT i.address, $1 AS state_name, pol.name AS policy,
                  pol.severity, pol.enforce
           FROM planned i
           JOIN policies pol ON $1 LIKE pol.states_like AND i.type LIKE pol.type_like
                AND i.provider LIKE pol.provider_like
           WHERE i.attributes @@ pol.path AND NOT EXISTS (
               SELECT 1 FROM open o WHERE o.address = i.address AND o.policy_id = pol.id)
           ORDER BY i.address, pol.name""",
        state_name,
        [i["address"] for i in instances],
        [i["type"] for i in instances],
        [i["provider"] for i in instances],
        [i["attributes"] for i in instances],
    )
    return [
        Finding(r["policy"], r["severity"], r["enforce"], r["state_name"], r["address"])
        for r in records
    ]


async def preview_resolved(
    conn: asyncpg.Connection,
    state_name: str,
    instances: Sequence[Mapping[str, Any]],
    gone: Sequence[str],
) -> list[Finding]:
    """The open violations of state `state_name` a write would resolve: those on the
    addresses it removes (`gone`), and those on `instances` (address, type, provider,
    attributes) whose new values the policy no longer matches."""
    records = await conn.fetch(
        """WITH planned AS (
               SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::jsonb[])
                   AS i (address, type, provider, attributes))
           SELECT pv.address, s.name AS state_name, pol.name AS policy,
                  pol.severity, pol.enforce
           FROM states s
           JOIN policy_violations pv ON pv.state_id = s.id AND pv.serial_to IS NULL
           JOIN policies pol ON pol.id = pv.policy_id
           LEFT JOIN planned i ON i.address = pv.address
           WHERE s.name = $1
             AND (pv.address = ANY($6::text[])
                  OR NOT (i.type LIKE pol.type_like AND i.provider LIKE pol.provider_like
                          AND i.attributes @@ pol.path))
           ORDER BY pv.address, pol.name""",
        state_name,
        [i["address"] for i in instances],
        [i["type"] for i in instances],
        [i["provider"] for i in instances],
        [i["attributes"] for i in instances],
        list(gone),
    )
    return [
        Finding(r["policy"], r["severity"], r["enforce"], r["state_name"], r["address"], False)
        for r in records
    ]
