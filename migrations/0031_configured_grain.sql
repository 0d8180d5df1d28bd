-- 0031_configured_grain: a configured version's edges at the grain they are declared
-- (app/configuration/edges.py, app/graph/hops.py configured_hop_sql).
--
-- configured_edges held a configured version's direct edges instance to instance: the
-- expansion of each `resource` edge (migration 0030) to every member of its resource, so
-- a reference covering a dense fan-in stored the product of its counts. A row is now one
-- of resource_dependencies' rows as stored (`kind`): an `instance` edge, or a `resource`
-- edge from an instance to a resource of several instances (to_resource_id: the
-- resource's id) with the reason its config addresses give, which every member shares.
-- The members stay in resource_dependencies; reads expand a `resource` row to the
-- members at the version read, the instance it is from left out.
--
-- A hop finds a configured version's rows to an instance and to a resource in indexes of
-- their own (app/graph/hops.py configured_hop_sql): the rows of a fan-in all lead to one
-- resource, so an index of both would have the planner expect every row of the version
-- at any instance, and scan them all once per instance of a walk's level.
--
-- Each DDL statement is an EXECUTE of its own: on a database that Citus distributes
-- already, the text of a DDL statement goes to the workers, and a file of several
-- statements would be refused (migration 0030 says the same).
DO $$ BEGIN
    EXECUTE $q$ALTER TABLE configured_edges ADD COLUMN kind text NOT NULL DEFAULT 'instance'$q$;
    EXECUTE $q$ALTER TABLE configured_edges ADD CONSTRAINT configured_edges_kind
        CHECK (kind IN ('instance', 'resource'))$q$;
    EXECUTE $q$DROP INDEX configured_edges_to$q$;
    EXECUTE $q$CREATE INDEX configured_edges_to
        ON configured_edges (state_id, serial, to_resource_id) WHERE kind = 'instance'$q$;
    EXECUTE $q$CREATE INDEX configured_edges_resource
        ON configured_edges (state_id, serial, to_resource_id) WHERE kind = 'resource'$q$;
END $$;

-- The copies of the versions whose declared edges have `resource` rows are made again
-- from their configuration's references, as a write of the version now makes them; the
-- others were copied instance to instance from `instance` rows, which they still are.
-- A version at a time: every statement names one state (one shard on Citus).
DO $$
DECLARE
    v record;
BEGIN
    FOR v IN
        SELECT cv.state_id, cv.serial, cv.configuration_id FROM configured_versions cv
        WHERE EXISTS (SELECT FROM resource_dependencies d
                      WHERE d.state_id = cv.state_id AND d.kind = 'resource'
                        AND d.serial_from <= cv.serial
                        AND (d.serial_to IS NULL OR d.serial_to > cv.serial))
        ORDER BY cv.state_id, cv.serial
    LOOP
        EXECUTE $q$DELETE FROM configured_edges WHERE state_id = $1 AND serial = $2$q$
            USING v.state_id, v.serial;
        EXECUTE $q$
            WITH addresses AS (
                SELECT r.id, config_address(r.address) AS address FROM resources r
                WHERE r.state_id = $1 AND r.serial_from <= $2
                  AND (r.serial_to IS NULL OR r.serial_to > $2)),
            ends AS (
                SELECT id, address FROM addresses
              UNION ALL
                (SELECT DISTINCT ON (m.from_resource_id) m.from_resource_id, a.address
                FROM resource_dependencies m JOIN addresses a ON a.id = m.to_resource_id
                WHERE m.kind = 'member' AND m.state_id = $1 AND m.serial_from <= $2
                  AND (m.serial_to IS NULL OR m.serial_to > $2)
                ORDER BY m.from_resource_id)),
            refs AS (
                SELECT DISTINCT ON (x.source, x.target) x.source, x.target, x.reason,
                       x.attributes
                FROM configuration_references x
                WHERE x.state_id = $1 AND x.configuration_id = $3
                ORDER BY x.source, x.target, x.reason DESC)
            INSERT INTO configured_edges (state_id, serial, from_resource_id, to_resource_id,
                                          kind, reason, attributes, direct)
            SELECT $1, $2, d.from_resource_id, d.to_resource_id, d.kind,
                   coalesce(x.reason, 'declared'), coalesce(x.attributes, '{}'),
                   d.direct OR x.reason IS NOT NULL
            FROM resource_dependencies d
            JOIN addresses f ON f.id = d.from_resource_id
            JOIN ends t ON t.id = d.to_resource_id
            LEFT JOIN refs x ON x.source = f.address AND x.target = t.address
            WHERE d.kind <> 'member' AND d.state_id = $1 AND d.serial_from <= $2
              AND (d.serial_to IS NULL OR d.serial_to > $2)
              AND (d.direct OR x.reason IS NOT NULL)$q$
            USING v.state_id, v.serial, v.configuration_id;
    END LOOP;
END $$;
