-- 0012_direct_edges: which dependency edges are direct (app/tfstate/reduction.py).
--
-- Terraform writes dependencies transitively closed; every declared edge stays, and
-- `direct` marks those no other declared path implies. Depth and paths of a blast
-- radius follow direct edges. Directness can change while an edge stays (a new
-- resource in between), so one pair of instances may have several edge rows over
-- successive serial ranges: the key takes serial_from. Edges written before this
-- migration are marked direct (their state's next write computes the flags).
ALTER TABLE resource_dependencies
    ADD COLUMN direct boolean NOT NULL DEFAULT true,
    DROP CONSTRAINT resource_dependencies_pkey,
    ADD PRIMARY KEY (from_resource_id, to_resource_id, serial_from);

-- Diffs and histories read the rows that began between two serials (the closed ones
-- have their own index, resources_closed): the work follows the change.
CREATE INDEX resources_opened ON resources (state_id, serial_from);

-- An edge is looked up from either end within its state: (state_id, end) indexes, so
-- a lookup never intersects a scan of every edge of the state (the planner did, with a
-- bare state_id index). Deleting a state's edges uses either one's prefix.
DROP INDEX resource_dependencies_state_id_idx;
DROP INDEX resource_dependencies_to_resource_id_idx;
CREATE INDEX resource_dependencies_from ON resource_dependencies (state_id, from_resource_id);
CREATE INDEX resource_dependencies_to ON resource_dependencies (state_id, to_resource_id);
