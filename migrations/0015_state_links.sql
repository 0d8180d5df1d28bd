-- 0015_state_links: one graph across states (issue 16), app/graph/links.py.
--
-- A link: a `terraform_remote_state` data source instance of a consumer state whose
-- config.address is a /states/{name} URL of this server (README, "Across states"). It
-- lives exactly as long as the data source's resources row: written when that row is,
-- closed (serial_to) when that row is. The producer is kept by name, not id: a producer
-- written later, renamed to that name, or deleted and recreated is linked whenever a
-- state of that name exists. `outputs`: the outputs the data source read, by name, each
-- the md5 of the value read (as jsonb text): the values stay in the data source's row
-- (its `outputs` attribute), with whatever protects it.
CREATE TABLE state_links (
    state_id uuid NOT NULL,  -- the consumer
    resource_id uuid NOT NULL,  -- the data source instance (resources.id)
    serial_from bigint NOT NULL,
    serial_to bigint,
    address text NOT NULL,
    producer_name text NOT NULL,
    outputs jsonb NOT NULL,
    PRIMARY KEY (state_id, resource_id)
);
-- Who reads a producer now: the open links by producer name. The one lookup that spans
-- consumer states (as inventory does, each state's rows are still found by state_id).
CREATE INDEX state_links_producer ON state_links (producer_name) WHERE serial_to IS NULL;

-- Output lineage: an output of a state whose value (or a string inside it) equals an
-- attribute value of a resource instance of the same version (inferred, never declared by
-- Terraform). Valid over [serial_from, serial_to) like the outputs and resources it joins.
CREATE TABLE output_lineage (
    state_id uuid NOT NULL,
    serial_from bigint NOT NULL,
    serial_to bigint,
    output_name text NOT NULL,
    resource_id uuid NOT NULL,
    path text[] NOT NULL,  -- the attribute's path in the instance
    PRIMARY KEY (state_id, output_name, resource_id, path, serial_from)
);
CREATE INDEX output_lineage_resource ON output_lineage (state_id, resource_id);

-- The md5 of a sensitive output's value (as jsonb text), which migration 0014 keeps
-- sealed apart (outputs.secrets): what a consumer read is compared with it. NULL for
-- other outputs, whose digest is md5(value::text).
ALTER TABLE outputs ADD COLUMN value_digest text;
