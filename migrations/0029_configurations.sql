-- 0029_configurations: the configuration graph (app/configuration/, docs/configuration-graph.md).
--
-- A configuration version is what a plan's `configuration` section says of a state's
-- code: its module calls and the references between its resources, names and
-- references only (never a value). A state's versions are numbered; a new one is kept
-- only when its content hash differs from the state's latest.
CREATE TABLE configurations (
    id                 uuid PRIMARY KEY,
    state_id           uuid NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    number             integer NOT NULL,
    hash               text NOT NULL,
    origin             text NOT NULL CHECK (origin IN ('plan', 'push')),
    submitter          text NOT NULL,
    base_serial        bigint,  -- the state's current serial when it was recorded
    terraform_version  text,
    document           jsonb NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (state_id, number)
);

-- A module call of a configuration: `key` is its path without instance keys
-- (`module.net.module.subnets`), `parent` the caller's ('' the root module).
CREATE TABLE configuration_modules (
    configuration_id    uuid NOT NULL REFERENCES configurations (id) ON DELETE CASCADE,
    state_id            uuid NOT NULL,
    key                 text NOT NULL,
    name                text NOT NULL,
    parent              text NOT NULL,
    source              text NOT NULL,
    version_constraint  text,
    expansion           text,
    PRIMARY KEY (configuration_id, key)
);
-- modules(source:): every call of a source across states
CREATE INDEX configuration_modules_source ON configuration_modules (source, configuration_id);

-- A reference between two resources of a configuration (addresses without instance
-- keys): `reason` explicit (depends_on) or implicit (the arguments in `attributes`).
CREATE TABLE configuration_references (
    configuration_id  uuid NOT NULL REFERENCES configurations (id) ON DELETE CASCADE,
    state_id          uuid NOT NULL,
    source            text NOT NULL,
    target            text NOT NULL,
    reason            text NOT NULL CHECK (reason IN ('explicit', 'implicit')),
    attributes        text[] NOT NULL,
    PRIMARY KEY (configuration_id, source, target, reason)
);

-- Each state's latest configuration.
CREATE TABLE state_configurations (
    state_id          uuid PRIMARY KEY REFERENCES states (id) ON DELETE CASCADE,
    configuration_id  uuid NOT NULL REFERENCES configurations (id) ON DELETE CASCADE
);
CREATE INDEX state_configurations_configuration ON state_configurations (configuration_id);

-- The per-version override of direct edges: a version of a state with a configuration
-- has its direct edges here (a reference explains them, or the reduction kept them:
-- resource_dependencies.direct), with their reason ('declared' when no reference
-- explains it). The blast radius of such a version follows these rows instead of
-- resource_dependencies.direct; its other declared edges are not direct. A pruned
-- version takes its rows with it (one trigger per version, not a check per edge).
CREATE TABLE configured_versions (
    state_id          uuid NOT NULL,
    serial            bigint NOT NULL,
    configuration_id  uuid NOT NULL REFERENCES configurations (id) ON DELETE CASCADE,
    PRIMARY KEY (state_id, serial),
    FOREIGN KEY (state_id, serial) REFERENCES state_versions (state_id, serial) ON DELETE CASCADE
);
CREATE TABLE configured_edges (
    state_id          uuid NOT NULL,
    serial            bigint NOT NULL,
    from_resource_id  uuid NOT NULL,
    to_resource_id    uuid NOT NULL,
    reason            text NOT NULL CHECK (reason IN ('explicit', 'implicit', 'declared')),
    attributes        text[] NOT NULL,
    direct            boolean NOT NULL,
    PRIMARY KEY (state_id, serial, from_resource_id, to_resource_id)
);
CREATE FUNCTION forget_configured_edges() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM configured_edges WHERE state_id = OLD.state_id AND serial = OLD.serial;
    RETURN OLD;
END $$;
CREATE TRIGGER configured_versions_forget AFTER DELETE ON configured_versions
    FOR EACH ROW EXECUTE FUNCTION forget_configured_edges();
CREATE INDEX configured_edges_to ON configured_edges (state_id, serial, to_resource_id);

-- An instance's or module instance's address without its instance keys (quoted keys may
-- hold brackets): app/configuration/parse.py config_address, in SQL.
CREATE FUNCTION config_address(address text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN regexp_replace(address, '\[("([^"\\]|\\.)*"|[^\]]*)\]', '', 'g');
