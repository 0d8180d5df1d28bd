-- 0014_secrets: secrets kept apart from what is searched, and sealed at rest with a key
-- (issue 14 part B; app/graph/sensitive.py, app/crypto.py, README "Secrets and
-- encryption at rest").
--
-- resources.secrets: the values a row's attributes hold at the paths Terraform marks
-- sensitive, or that are secret by convention (credentials of a terraform_remote_state
-- config): [[path, value], ...] as JSON, sealed with AES-256-GCM when
-- INFRAGRAPH_ENCRYPTION_KEY is set. `attributes` holds null at those paths, so attribute
-- search, filters and policies cannot match a secret. NULL: the row holds no secret.
-- outputs.secrets: a sensitive output's value, the same way (`value` holds null).
--
-- Rows written before this migration still hold their secrets in place; the ones that
-- may hold some are marked with an empty `secrets` (''), which `infragraph rotate-key`
-- splits (and seals, with a key). Readers withhold sensitive values of those as before.
--
-- Sealed under a key as well, in the columns they already have: raw_state_chunks.data
-- (its `hash` then an HMAC under the key), state_versions.raw_md5 and iac_secret_key.key;
-- versions' inline raw_state (before 0009) move to chunks when rotate-key seals them.
ALTER TABLE resources ADD COLUMN secrets bytea;
ALTER TABLE outputs ADD COLUMN secrets bytea;

UPDATE resources SET secrets = ''
WHERE (sensitive_attributes IS NOT NULL AND sensitive_attributes <> '[]'::jsonb)
   OR (mode = 'data' AND type = 'terraform_remote_state');
UPDATE outputs SET secrets = '' WHERE sensitive;
