-- 0010_blast_walks: blast-radius walks kept for the pages that follow (issue 19).
--
-- A blast radius is walked whole by its first page (its total, its shortest depths and
-- paths need the whole walk). Versions are immutable, so the walk's answer never changes:
-- the first page keeps it here and later pages read their slice by (depth, address).
-- app/graph/edges.py owns both tables. They are UNLOGGED: every server instance shares
-- them, and a crash that empties them only costs a walk again. Like the graph tables they
-- carry state_id, the distribution column (README, "Scaling out").

-- A walk: its key (state, version serial, root row, direction, maxDepth, the edges it
-- follows: 'direct' today) and its size. `kept`: its rows are in blast_walk_rows; false
-- for a walk that only counted (a totalCount asked alone).
CREATE UNLOGGED TABLE blast_walks (
    id bigint GENERATED ALWAYS AS IDENTITY,
    state_id uuid NOT NULL,
    serial bigint NOT NULL,
    root_id uuid NOT NULL,
    direction text NOT NULL,
    max_depth integer NOT NULL,
    edge_kind text NOT NULL,
    total integer NOT NULL,
    kept boolean NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (state_id, id),
    UNIQUE (state_id, serial, root_id, direction, max_depth, edge_kind)
);

-- A walk's resources, in page order; `path` is the walk's encoding of the addresses from
-- the root to the resource (edges.py).
CREATE UNLOGGED TABLE blast_walk_rows (
    state_id uuid NOT NULL,
    walk_id bigint NOT NULL,
    depth integer NOT NULL,
    address text COLLATE "C" NOT NULL,
    resource_id uuid NOT NULL,
    path text NOT NULL,
    PRIMARY KEY (state_id, walk_id, depth, address)
);
