-- 0023_whole_walks: a kept blast-radius walk is the whole radius, whatever maxDepth.
--
-- A radius' members are every resource that depends on the root, transitively, whatever
-- their depth; a page with maxDepth shows those within it and counts the rest
-- (beyondCount). So one walk per (state, serial, root, direction, edge kind) answers
-- every maxDepth: it is walked whole, and `sizes` holds how many members each depth has
-- (sizes[1]: depth 1), from which a page with a limit reads its totals.
-- The tables are a cache (UNLOGGED, app/graph/edges.py): emptied, then rekeyed.
TRUNCATE blast_walks, blast_walk_rows;
-- Dropping max_depth drops the unique key it was part of.
ALTER TABLE blast_walks
    DROP COLUMN max_depth,
    ADD COLUMN sizes integer[] NOT NULL,
    ADD UNIQUE (state_id, serial, root_id, direction, edge_kind);
