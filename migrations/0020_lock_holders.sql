-- 0020_lock_holders: who holds a lock, the plan role, and who may read a state's outputs
-- (app/graph/locks.py, app/access.py, app/graph/readers.py).
--
-- state_locks.holder: the token (principal) that took the lock; only it releases the lock
-- or writes under its ID, an admin force-unlocks. NULL: taken before holders were kept,
-- released by its ID as before (so an apply running across the upgrade can finish).
ALTER TABLE state_locks ADD COLUMN holder text;

-- plan: read's GraphQL, plus the raw state and plan locks (what `terraform plan` needs)
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_role_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_role_check
    CHECK (role IN ('read', 'plan', 'write', 'admin'));

-- Who may read a state's outputs (a reduced GET: outputs, no resources) beyond its own
-- readers: token names, and globs of consumer states (a token that plans or writes a state
-- a glob matches reads as that consumer).
ALTER TABLE states
    ADD COLUMN output_reader_tokens text[] NOT NULL DEFAULT '{}',
    ADD COLUMN output_reader_states text[] NOT NULL DEFAULT '{}';
