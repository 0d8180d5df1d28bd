-- 0011_policies: saved checks on every write (issue 20; app/graph/policies.py).
--
-- A policy covers resources by globs (type; optionally state name and provider) and
-- marks a violation with a condition: a SQL/JSON path predicate over a resource's
-- attributes, evaluated by PostgreSQL (`@@`) on the instances each write adds or
-- changes, and over every current version when the policy is made or changed.
-- A violation follows versions as graph rows do: open from the serial it was first
-- seen at (serial_from) to the serial that resolved it (serial_to, NULL while open).

-- A glob (`*` any run, `?` one character) as a LIKE pattern (escape: backslash).
CREATE FUNCTION glob_like(glob text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN replace(replace(replace(replace(replace(
        glob, '\', '\\'), '%', '\%'), '_', '\_'), '*', '%'), '?', '_');

CREATE TABLE policies (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name           text NOT NULL UNIQUE,
    description    text NOT NULL DEFAULT '',
    severity       text NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
    resource_type  text NOT NULL,  -- glob over resources.type
    states         text,           -- glob over state names; NULL: every state
    provider       text,           -- glob over resources.provider; NULL: any
    condition      text NOT NULL,  -- as written; `path` is what PostgreSQL parsed
    path           jsonpath NOT NULL GENERATED ALWAYS AS (condition::jsonpath) STORED,
    -- IaC applies refuse to open a violation of an enforced policy (Terraform writes never)
    enforce        boolean NOT NULL DEFAULT false,
    created_by     text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    type_like      text NOT NULL GENERATED ALWAYS AS (glob_like(resource_type)) STORED,
    states_like    text NOT NULL GENERATED ALWAYS AS (coalesce(glob_like(states), '%')) STORED,
    provider_like  text NOT NULL GENERATED ALWAYS AS (coalesce(glob_like(provider), '%')) STORED
);

-- Graph rows carry state_id (the distribution column, README "Scaling out"); so do
-- these. A violation goes with its state (store.delete_state) and with its policy
-- (policies.delete_policy); no foreign keys: a big first write may open hundreds of
-- thousands, and per-row checks would cost more than the rows.
CREATE TABLE policy_violations (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    state_id     uuid NOT NULL,
    policy_id    uuid NOT NULL,
    address      text NOT NULL,
    serial_from  bigint NOT NULL,  -- first seen
    serial_to    bigint,           -- resolved; NULL while open
    -- kept on the row: retention may delete the versions these serials name
    opened_at    timestamptz NOT NULL DEFAULT now(),
    opened_by    text NOT NULL,
    resolved_at  timestamptz,
    resolved_by  text
);
CREATE UNIQUE INDEX policy_violations_open ON policy_violations (state_id, address, policy_id)
    WHERE serial_to IS NULL;
CREATE INDEX ON policy_violations (state_id, address);
CREATE INDEX ON policy_violations (policy_id);

-- The attributes a condition reads: each value at a `sensitive_attributes` path
-- replaced by null, as readers see them (app/graph/sensitive.py, the same rules): a
-- path is its get_attr names and index keys; an unknown step withholds everything
-- under the steps before it; a path that is not there withholds nothing; a shape not
-- understood withholds everything (NULL: no condition holds).
CREATE FUNCTION policy_view(attributes jsonb, sensitive jsonb) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    steps jsonb;
    step jsonb;
    path text[];
    key text;
    inside jsonb;
BEGIN
    IF sensitive IS NULL OR sensitive = '[]' OR attributes IS NULL THEN
        RETURN attributes;
    END IF;
    IF jsonb_typeof(sensitive) <> 'array' THEN
        RETURN NULL;
    END IF;
    FOR i IN 0 .. jsonb_array_length(sensitive) - 1 LOOP
        steps := sensitive -> i;
        IF jsonb_typeof(steps) <> 'array' THEN
            RETURN NULL;
        END IF;
        path := '{}';
        inside := attributes;
        FOR j IN 0 .. jsonb_array_length(steps) - 1 LOOP
            step := steps -> j;
            key := CASE
                WHEN step ->> 'type' = 'get_attr' AND jsonb_typeof(step -> 'value') = 'string'
                    THEN step ->> 'value'
                WHEN step ->> 'type' = 'index'
                     AND jsonb_typeof(step -> 'value' -> 'value') = 'string'
                    THEN step -> 'value' ->> 'value'
                WHEN step ->> 'type' = 'index'
                     AND jsonb_typeof(step -> 'value' -> 'value') = 'number'
                     AND (step -> 'value' ->> 'value')::numeric
                         = trunc((step -> 'value' ->> 'value')::numeric)
                    THEN trunc((step -> 'value' ->> 'value')::numeric)::text
            END;
            EXIT WHEN key IS NULL;
            IF jsonb_typeof(inside) = 'object' AND inside ? key THEN
                inside := inside -> key;
            ELSIF jsonb_typeof(inside) = 'array' AND key ~ '^\d{1,9}$'
                  AND key::integer < jsonb_array_length(inside) THEN
                inside := inside -> key::integer;
            ELSE
                path := NULL;  -- not there: nothing to withhold
                EXIT;
            END IF;
            path := path || key;
        END LOOP;
        IF path = '{}' THEN
            RETURN NULL;
        ELSIF path IS NOT NULL THEN
            attributes := jsonb_set(attributes, path, 'null', false);
        END IF;
    END LOOP;
    RETURN attributes;
END $$;

-- The key of each value a `sensitive_attributes` marks: the last name or map key of
-- each path (list indexes skipped), up to its first unknown step.
CREATE FUNCTION sensitive_keys(sensitive jsonb) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    steps jsonb;
    step jsonb;
    last text;
    keys text[] := '{}';
BEGIN
    IF jsonb_typeof(sensitive) IS DISTINCT FROM 'array' THEN
        RETURN keys;
    END IF;
    FOR i IN 0 .. jsonb_array_length(sensitive) - 1 LOOP
        steps := sensitive -> i;
        CONTINUE WHEN jsonb_typeof(steps) <> 'array';
        last := NULL;
        FOR j IN 0 .. jsonb_array_length(steps) - 1 LOOP
            step := steps -> j;
            IF step ->> 'type' = 'get_attr' AND jsonb_typeof(step -> 'value') = 'string' THEN
                last := step ->> 'value';
            ELSIF step ->> 'type' = 'index'
                  AND jsonb_typeof(step -> 'value' -> 'value') = 'string' THEN
                last := step -> 'value' ->> 'value';
            ELSIF NOT (step ->> 'type' = 'index'
                       AND jsonb_typeof(step -> 'value' -> 'value') = 'number') THEN
                EXIT;
            END IF;
        END LOOP;
        IF last IS NOT NULL THEN
            keys := keys || last;
        END IF;
    END LOOP;
    RETURN keys;
END $$;
