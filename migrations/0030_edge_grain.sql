-- 0030_edge_grain: dependency edges at the grain they are declared
-- (app/graph/write/edges.py, app/tfstate/grain.py).
--
-- An instance's `dependencies` name resources; an edge to a resource of two instances
-- or more is one row of kind `resource` (to_resource_id: the resource's id,
-- md5('resource ' || its config address)::uuid), and the resource's instances are rows
-- of kind `member` (from the resource's id to each instance, direct). Reads expand a
-- `resource` edge to the members valid at the version read (app/graph/hops.py). The
-- rows written before are `instance` edges, which they are.
--
-- A hop finds the rows through a resource in indexes of their own (app/graph/hops.py):
-- one probe of an index that only states with such edges fill, where the edge indexes
-- give the instance edges, so reading those costs what it did.
--
-- Each statement that changes the table is an EXECUTE of its own: on a database that
-- Citus distributes already, the text of a DDL statement goes to the workers, and a
-- file of several statements would be refused (a constraint added with its column too).
DO $$ BEGIN
    EXECUTE $q$ALTER TABLE resource_dependencies ADD COLUMN kind text NOT NULL DEFAULT 'instance'$q$;
    EXECUTE $q$ALTER TABLE resource_dependencies ADD CONSTRAINT resource_dependencies_kind
        CHECK (kind IN ('instance', 'resource', 'member'))$q$;
    EXECUTE $q$CREATE INDEX resource_dependencies_resource
        ON resource_dependencies (state_id, from_resource_id) WHERE kind = 'resource'$q$;
    EXECUTE $q$CREATE INDEX resource_dependencies_member
        ON resource_dependencies (state_id, to_resource_id) WHERE kind = 'member'$q$;
END $$;

-- Each state's current edges are converted where they can be: the open edges from one
-- instance to every current instance of a resource of two or more (not its own), with
-- one flag for them all, become one `resource` edge from the current version on (and
-- the resource's `member` rows); the instance edges close there (those the current
-- version wrote are deleted: their range would be empty). Older versions keep theirs.
CREATE TEMPORARY TABLE grain_edges ON COMMIT DROP AS
    WITH current AS (
        SELECT r.state_id, r.id, config_address(r.address) AS resource,
               count(*) OVER (PARTITION BY r.state_id, config_address(r.address)) AS size
        FROM resources r
        WHERE r.serial_to IS NULL AND r.deposed IS NULL),
    grouped AS (
        SELECT d.state_id, d.from_resource_id, t.resource, bool_and(d.direct) AS direct
        FROM resource_dependencies d
        JOIN current t ON t.state_id = d.state_id AND t.id = d.to_resource_id
        JOIN resources f ON f.state_id = d.state_id AND f.id = d.from_resource_id
        WHERE d.serial_to IS NULL AND t.size > 1 AND config_address(f.address) <> t.resource
        GROUP BY d.state_id, d.from_resource_id, t.resource
        HAVING count(*) = min(t.size) AND bool_and(d.direct) = bool_or(d.direct))
    SELECT g.state_id, g.from_resource_id, g.resource, g.direct, v.id AS version_id,
           v.serial, md5('resource ' || g.resource)::uuid AS resource_id
    FROM grouped g
    JOIN states s ON s.id = g.state_id
    JOIN state_versions v ON v.state_id = s.id AND v.serial = s.current_serial;

CREATE TEMPORARY TABLE grain_replaced ON COMMIT DROP AS
    SELECT d.state_id, d.from_resource_id, d.to_resource_id, d.serial_from, g.serial
    FROM grain_edges g
    JOIN resource_dependencies d ON d.state_id = g.state_id
        AND d.from_resource_id = g.from_resource_id AND d.serial_to IS NULL
    JOIN resources t ON t.state_id = d.state_id AND t.id = d.to_resource_id
    WHERE config_address(t.address) = g.resource;

DELETE FROM resource_dependencies d USING grain_replaced x
WHERE d.state_id = x.state_id AND d.from_resource_id = x.from_resource_id
  AND d.to_resource_id = x.to_resource_id AND d.serial_from = x.serial_from
  AND x.serial_from >= x.serial;

UPDATE resource_dependencies d SET serial_to = x.serial FROM grain_replaced x
WHERE d.state_id = x.state_id AND d.from_resource_id = x.from_resource_id
  AND d.to_resource_id = x.to_resource_id AND d.serial_from = x.serial_from
  AND x.serial_from < x.serial;

INSERT INTO resource_dependencies
    (state_id, state_version_id, serial_from, from_resource_id, to_resource_id, kind, direct)
SELECT state_id, version_id, serial, from_resource_id, resource_id, 'resource', direct
FROM grain_edges;

INSERT INTO resource_dependencies
    (state_id, state_version_id, serial_from, from_resource_id, to_resource_id, kind, direct)
SELECT g.state_id, g.version_id, g.serial, g.resource_id, t.id, 'member', true
FROM (SELECT DISTINCT state_id, version_id, serial, resource, resource_id FROM grain_edges) g
JOIN resources t ON t.state_id = g.state_id AND t.serial_to IS NULL AND t.deposed IS NULL
    AND config_address(t.address) = g.resource;
