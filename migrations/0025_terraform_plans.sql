-- 0025_terraform_plans: Terraform plans submitted for analysis (app/plans/, docs/plans.md).
--
-- A plan is read against the state's version current at submission (`base_version_id`,
-- `base_serial`): pruning that version drops its plans, as retention drops versions.
-- `analysis` holds what was read from the plan's JSON (changes masked where Terraform
-- marks them sensitive); the document itself is not kept.
CREATE TABLE terraform_plans (
    id               uuid PRIMARY KEY,
    state_id         uuid NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    base_version_id  uuid REFERENCES state_versions (id) ON DELETE CASCADE,
    base_serial      bigint,
    stale            boolean NOT NULL,
    submitter        text NOT NULL,
    analysis         jsonb NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX terraform_plans_by_state ON terraform_plans (state_id, created_at DESC, id DESC);
