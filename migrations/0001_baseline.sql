-- 0001_baseline: the v0 graph schema (shared/seeds/graph-schema-v0.txt).
-- A Terraform v4 state as a normalized, versioned graph. Every column that a
-- state file carries optionally is NULL when the key was absent; keys the
-- schema does not normalize are kept verbatim in an `extra` JSONB column, so
-- import-then-export gives back exactly what came in.

CREATE TABLE states (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name        text NOT NULL UNIQUE,
    kind        text NOT NULL DEFAULT 'terraform' CHECK (kind IN ('terraform', 'iac')),
    lineage     text,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Immutable: one row per write. raw_state keeps the bytes as written.
CREATE TABLE state_versions (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    state_id           uuid NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    serial             bigint NOT NULL,
    lineage            text NOT NULL,
    terraform_version  text,
    raw_state          bytea NOT NULL,
    raw_md5            bytea NOT NULL,
    -- top-level keys not normalized (check_results, remote, future keys)
    extra              jsonb NOT NULL DEFAULT '{}',
    -- known container keys ("outputs", "resources") absent from the document
    omitted            text[] NOT NULL DEFAULT '{}',
    created_by         text NOT NULL DEFAULT 'anonymous',
    created_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (state_id, serial)
);

-- One row per resource instance object (deposed objects included).
CREATE TABLE resources (
    id                       uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    state_version_id         uuid NOT NULL REFERENCES state_versions (id) ON DELETE CASCADE,
    address                  text NOT NULL,
    -- where the instance sits in the document: resources[resource_index].instances[instance_index]
    resource_index           integer NOT NULL,
    instance_index           integer NOT NULL,
    mode                     text NOT NULL,
    type                     text NOT NULL,
    name                     text NOT NULL,
    provider                 text NOT NULL,
    module_path              text,
    each                     text,
    index_key                jsonb,
    deposed                  text,
    status                   text,
    schema_version           bigint,
    attributes               jsonb,
    attributes_flat          jsonb,
    sensitive_attributes     jsonb,
    private                  text,
    dependencies_raw         jsonb,
    depends_on_raw           jsonb,
    create_before_destroy    boolean,
    identity                 jsonb,
    identity_schema_version  bigint,
    -- instance keys not normalized, and resource-level ones (same on every instance)
    extra                    jsonb NOT NULL DEFAULT '{}',
    resource_extra           jsonb NOT NULL DEFAULT '{}',
    UNIQUE (state_version_id, address)
);

-- An edge is its pair of instances: the pair is the key (the seed's UNIQUE).
-- Both ends are resources of one version, written once by one COPY and deleted
-- with their state by app/graph/store.py. No foreign keys: their per-row checks
-- cost more than the COPY of 60,000 edges itself.
CREATE TABLE resource_dependencies (
    state_version_id  uuid NOT NULL,
    from_resource_id  uuid NOT NULL,
    to_resource_id    uuid NOT NULL,
    PRIMARY KEY (from_resource_id, to_resource_id)
);

CREATE TABLE outputs (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    state_version_id  uuid NOT NULL REFERENCES state_versions (id) ON DELETE CASCADE,
    name              text NOT NULL,
    position          integer NOT NULL,
    value             jsonb,
    type              jsonb,
    sensitive         boolean,
    extra             jsonb NOT NULL DEFAULT '{}',
    UNIQUE (state_version_id, name)
);

-- Whole-state locks: INSERT ... ON CONFLICT DO NOTHING decides the winner.
-- Locking a state with no versions yet (a first apply) creates its states row.
CREATE TABLE state_locks (
    state_id    uuid PRIMARY KEY REFERENCES states (id) ON DELETE CASCADE,
    lock_id     text NOT NULL,
    info        jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Append-only audit trail. state_name is kept so events outlive a deleted state.
CREATE TABLE events (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    state_id    uuid REFERENCES states (id) ON DELETE SET NULL,
    state_name  text NOT NULL,
    action      text NOT NULL,
    actor       text NOT NULL,
    serial      bigint,
    detail      jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX ON resources (type);
-- The seed's index on resources (state_version_id) is the leading column of
-- UNIQUE (state_version_id, address): a second one would only slow writes.
-- jsonb_path_ops: containment (@>) is the query, at a third of the default's
-- size. A big pending list lets a bulk write append its entries and leaves the
-- merge to autovacuum (it halves the time of a 20,000-instance import).
CREATE INDEX ON resources USING gin (attributes jsonb_path_ops)
    WITH (fastupdate = on, gin_pending_list_limit = 65536);
CREATE INDEX ON resource_dependencies (to_resource_id);
CREATE INDEX ON resource_dependencies (state_version_id);
CREATE INDEX ON state_versions (state_id, serial DESC);
CREATE INDEX ON events (state_id, created_at DESC);
-- not in the seed: events of deleted states, by name
CREATE INDEX ON events (state_name, created_at DESC);
