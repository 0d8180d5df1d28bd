-- 0006: versions the server cannot read. OpenTofu's client-side state encryption
-- sends an envelope (key metadata and ciphertext) instead of a state: it is kept
-- verbatim, like any version's bytes, with no resources, edges or outputs.
ALTER TABLE state_versions ADD COLUMN encrypted boolean NOT NULL DEFAULT false;
