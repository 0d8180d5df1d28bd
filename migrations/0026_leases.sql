-- 0026_leases: shared plan locks, and leases (resource-scoped locks taken from a plan)
-- (app/leases/, docs/terraform.md#concurrent-applies).
--
-- A plan reads a version and writes nothing: any number of plans hold a state at once,
-- beside its writer lock (state_locks, one per state). Each is released by its ID.
CREATE TABLE state_plan_locks (
    state_id    uuid NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    lock_id     text NOT NULL,
    info        jsonb NOT NULL,
    holder      text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (state_id, lock_id)
);

-- A lease: what one plan changes (its footprint), held by a token until released, its
-- Terraform unlocks it, or it expires (each request under it renews it). `base_serial`:
-- the version the plan was made from; `snapshot`: what the lease's Terraform last wrote
-- (sealed under the encryption key when there is one), NULL before its first write.
CREATE TABLE leases (
    id           uuid PRIMARY KEY,
    state_id     uuid NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    holder       text NOT NULL,
    base_serial  bigint NOT NULL,
    addresses    text[] NOT NULL,
    outputs      text[] NOT NULL,
    ttl_seconds  integer NOT NULL CHECK (ttl_seconds > 0),
    expires_at   timestamptz NOT NULL,
    lock_id      text,
    lock_info    jsonb,
    snapshot     bytea,
    writes       integer NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX leases_by_state ON leases (state_id, created_at);
-- compressed (zstd) by app/leases/backend.py: not again by the TOAST
ALTER TABLE leases ALTER COLUMN snapshot SET STORAGE EXTERNAL;

-- The footprint, one row per instance address or output ('output.NAME'): no two live
-- leases of a state share one. A lease that ends (released, unlocked, expired) is
-- deleted with its footprint.
CREATE TABLE lease_footprints (
    lease_id  uuid NOT NULL REFERENCES leases (id) ON DELETE CASCADE,
    state_id  uuid NOT NULL,
    address   text NOT NULL,
    EXCLUDE USING btree (state_id WITH =, address WITH =)
);
CREATE INDEX lease_footprints_by_lease ON lease_footprints (lease_id);
