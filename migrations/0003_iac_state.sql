-- 0003_iac_state: which live resource each IaC ref of a system names, and what the
-- system last applied to it (spec: shared/spec/iac.md, "State").
--
-- No foreign key to the live resource: a resource deleted outside IaC must leave its row
-- behind, so plan can report it as orphaned. last_applied_spec is internal (secrets
-- removed, only the keys the declaration provided); the public view never shows it.

CREATE TABLE iac_state (
    scope_id           uuid NOT NULL REFERENCES scopes (id) ON DELETE CASCADE,
    system             text NOT NULL,
    resource_type      text NOT NULL CHECK (resource_type IN
                           ('table', 'column', 'rule', 'trigger', 'view', 'grant',
                            'client_access', 'command', 'insight_selection', 'public_read')),
    ref                text NOT NULL,
    resource_id        text NOT NULL,  -- a UUID, or "{table uuid}:{key}" for a column
    table_id           uuid,           -- NULL for command and insight_selection
    last_applied_spec  jsonb NOT NULL DEFAULT '{}',
    updated_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (scope_id, system, resource_type, ref)
);
-- One live resource is claimed by one system at most (two documents never compete).
CREATE UNIQUE INDEX iac_state_claim_key ON iac_state (scope_id, resource_id);
