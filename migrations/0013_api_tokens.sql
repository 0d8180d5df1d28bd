-- 0013_api_tokens: API tokens with a role and what they may touch (issue 14; app/access.py,
-- app/tokens.py).
--
-- A token is kept as its SHA-256 only: the token itself is shown once, when made.
-- `patterns` is what the token may touch, as globs over state names (app/access.py):
-- Terraform-state globs, and `iac:{slug}/*` for each IaC scope; NULL: everything.

CREATE TABLE api_tokens (
    name          text PRIMARY KEY,
    token_hash    bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    role          text NOT NULL CHECK (role IN ('read', 'write', 'admin')),
    state_globs   text[] NOT NULL DEFAULT '{}',
    scopes        text[] NOT NULL DEFAULT '{}',
    created_by    text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    revoked_at    timestamptz,
    last_used_at  timestamptz
);

-- Whether a state name is one a token's patterns (app.access.Principal.patterns) let it
-- see: an `iac:` name by the `iac:` patterns only, any other name by the others only
-- (so a glob `*` never reaches IaC states). The one SQL form of Principal.may_read.
CREATE FUNCTION may_read(name text, patterns text[]) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN patterns IS NULL OR EXISTS (
        SELECT FROM unnest(patterns) AS p
        WHERE (p LIKE 'iac:%') = (name LIKE 'iac:%') AND name LIKE glob_like(p)
    );
