-- 0021_secrets_everywhere: secrets kept out of every readable copy (docs/security.md,
-- "Secrets and encryption at rest").
--
-- The catalog's objects that may hold secrets (a trigger's or command's `action`, a
-- table's `settings`, a column's `options`): the values under secret keys
-- (app/secretnames.py) are kept in `secrets`, sealed under INFRAGRAPH_ENCRYPTION_KEY when
-- set ({field: [[path, value], ...]} as JSON), the object holding "(secret)" in their
-- place (app/catalog/sealed.py). NULL: none. Rows written before hold them in place:
-- reads mask them by name, and `infragraph rotate-key` splits and seals them.
ALTER TABLE tables ADD COLUMN secrets bytea;
ALTER TABLE columns ADD COLUMN secrets bytea;
ALTER TABLE triggers ADD COLUMN secrets bytea;
ALTER TABLE commands ADD COLUMN secrets bytea;

-- A write of a consumer asks which outputs its producers mark sensitive (any kept
-- version), to seal them in the consumer's row (app/graph/sealing.py).
CREATE INDEX outputs_sensitive ON outputs (state_id, name) WHERE sensitive;
-- A producer's write re-seals the rows of its consumers, current and past: their links
-- by producer name, open or closed.
CREATE INDEX state_links_by_producer ON state_links (producer_name);

-- outputs.value_digest and the digests in state_links.outputs are keyed with a key
-- (app/graph/digests.py: `k{key id}:` and an HMAC-SHA256), and value_digest is kept for
-- every output, not only sensitive ones. Rows written before keep their MD5 (readers fall
-- back to md5(value) where value_digest is NULL) until `infragraph rotate-key` rewrites
-- them; a consumer compared across the two forms shows as stale until then.
