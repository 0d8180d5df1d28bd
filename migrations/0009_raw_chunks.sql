-- 0009: a version's raw bytes as content-defined chunks, compressed, stored once per state.
--
-- A write cuts its body where the content says (FastCDC, app/graph/raw.py), so a change in
-- the middle of a state changes only the chunks around it: the next version stores those
-- few and lists the rest by hash. Each chunk is one zstd frame.
--
-- raw_state_chunks: one row per distinct chunk of a state.
--   state_id  the state whose versions use the chunk (Citus distributes by it; co-located
--             with state_versions, so reading a version's bytes stays on one shard)
--   hash      SHA-256 of the uncompressed chunk
--   length    the uncompressed chunk's length in bytes
--   data      the chunk, zstd-compressed (stored as is: it does not compress again)
-- A chunk no version lists any more is deleted by retention (delete_unreferenced_chunks).
CREATE TABLE raw_state_chunks (
    state_id  uuid NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    hash      bytea NOT NULL,
    length    integer NOT NULL,
    data      bytea NOT NULL,
    PRIMARY KEY (state_id, hash)
);
ALTER TABLE raw_state_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

-- state_versions now holds a version's raw bytes in one of two ways, exactly one set:
--   raw_chunks  the hashes of its chunks in order (raw_state_chunks of the same state_id);
--               every version written from this migration on
--   raw_state   the bytes inline, uncompressed (0004): versions written before it keep them
ALTER TABLE state_versions ADD COLUMN raw_chunks bytea[];
ALTER TABLE state_versions ALTER COLUMN raw_state DROP NOT NULL;
ALTER TABLE state_versions
    ADD CONSTRAINT state_versions_raw_bytes CHECK ((raw_state IS NULL) <> (raw_chunks IS NULL));
