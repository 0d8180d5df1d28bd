-- 0018_raw_hashes: each resource row's raw hash (issue 11, app/tfstate/scan.py).
--
-- A Terraform write keeps the current version's row of an instance whose raw hash (its
-- resource's fields and the instance object as POSTed) is the row's, without normalizing
-- it again. content_hash stays what decides sharing; raw_hash only spares the work. Rows
-- written before this migration have none (NULL): a write normalizes their instances,
-- keeps the rows whose content hash matches (as before) and records their raw hash then.
ALTER TABLE resources ADD COLUMN raw_hash bytea;
