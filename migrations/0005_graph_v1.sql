-- 0005_graph_v1: versions share what did not change (the seed's "graph-scoped engine").
--
-- A resource, edge or output row is valid over a range of serials of its state:
-- [serial_from, serial_to), serial_to NULL while the row is in the current version.
-- A write compares the new document with the current version (content_hash: a hash of
-- everything the row holds but its position) and inserts only what was added or
-- changed, closing (serial_to = the new serial) what was removed or replaced. A version
-- at serial S holds exactly the rows with serial_from <= S < coalesce(serial_to, inf).
--
-- Columns whose meaning changes:
-- - resources.state_version_id, outputs.state_version_id, resource_dependencies
--   .state_version_id: the version that wrote the row (its first version); after
--   retention it may name a pruned version (no foreign key). Reads go by the range.
-- - resources.resource_index, instance_index: the row's place in the document that wrote
--   it. A version renders its resources in Terraform's order (module, mode, type, name;
--   then index key, deposed key) unless state_versions.layout lists another order.
--
-- Every graph table carries state_id, and every statement on one names it: the
-- distribution column on Citus (README, "Scaling out"). There are no foreign keys from
-- the graph rows to their versions or states: a shared row outlives the version that
-- wrote it, and per-row checks would cost more than the COPY; app/graph/store.py
-- deletes a state's rows with it.

-- Versions written before this migration keep one row set each: their rows become
-- valid from their version's serial to the next version's.
CREATE TEMPORARY TABLE version_spans ON COMMIT DROP AS
    SELECT id, state_id, serial,
           lead(serial) OVER (PARTITION BY state_id ORDER BY serial) AS next_serial
    FROM state_versions;
CREATE INDEX ON version_spans (id);

ALTER TABLE state_versions
    ADD COLUMN resource_count integer NOT NULL DEFAULT 0,
    -- NULL: resources in Terraform's order; else [[address, ...] per resource, ...]
    ADD COLUMN layout jsonb;

UPDATE state_versions v SET
    resource_count = (SELECT count(*) FROM resources r WHERE r.state_version_id = v.id),
    layout = (SELECT coalesce(jsonb_agg(g.addresses ORDER BY g.resource_index), '[]')
              FROM (SELECT resource_index, jsonb_agg(address ORDER BY instance_index) AS addresses
                    FROM resources r WHERE r.state_version_id = v.id
                    GROUP BY resource_index) g);

-- resources
ALTER TABLE resources
    DROP CONSTRAINT resources_state_version_id_fkey,
    DROP CONSTRAINT resources_state_version_id_address_key,
    ADD COLUMN state_id uuid,
    ADD COLUMN serial_from bigint,
    ADD COLUMN serial_to bigint,
    ADD COLUMN content_hash bytea;  -- NULL on rows written before v1: never equal, rewritten
UPDATE resources r SET state_id = s.state_id, serial_from = s.serial, serial_to = s.next_serial
FROM version_spans s WHERE s.id = r.state_version_id;
ALTER TABLE resources
    ALTER COLUMN state_id SET NOT NULL,
    ALTER COLUMN serial_from SET NOT NULL;
-- A version's rows by address (lists, lookups, the write's read of the current rows).
ALTER TABLE resources ADD CONSTRAINT resources_state_address_key
    UNIQUE (state_id, address, serial_from);
-- What a write or a diff closed: only closed rows are indexed.
CREATE INDEX resources_closed ON resources (state_id, serial_to) WHERE serial_to IS NOT NULL;

-- edges
ALTER TABLE resource_dependencies
    ADD COLUMN state_id uuid,
    ADD COLUMN serial_from bigint,
    ADD COLUMN serial_to bigint;
UPDATE resource_dependencies d SET state_id = s.state_id, serial_from = s.serial,
    serial_to = s.next_serial
FROM version_spans s WHERE s.id = d.state_version_id;
ALTER TABLE resource_dependencies
    ALTER COLUMN state_id SET NOT NULL,
    ALTER COLUMN serial_from SET NOT NULL;
DROP INDEX resource_dependencies_state_version_id_idx;
CREATE INDEX ON resource_dependencies (state_id);

-- outputs
ALTER TABLE outputs
    DROP CONSTRAINT outputs_state_version_id_fkey,
    DROP CONSTRAINT outputs_state_version_id_name_key,
    ADD COLUMN state_id uuid,
    ADD COLUMN serial_from bigint,
    ADD COLUMN serial_to bigint,
    ADD COLUMN content_hash bytea;
UPDATE outputs o SET state_id = s.state_id, serial_from = s.serial, serial_to = s.next_serial
FROM version_spans s WHERE s.id = o.state_version_id;
ALTER TABLE outputs
    ALTER COLUMN state_id SET NOT NULL,
    ALTER COLUMN serial_from SET NOT NULL;
ALTER TABLE outputs ADD CONSTRAINT outputs_state_name_key UNIQUE (state_id, name, serial_from);
