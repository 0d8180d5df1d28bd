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
