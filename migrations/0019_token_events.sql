-- 0019_token_events: a server that has had a token never opens again, and a token's
-- expiry is recorded once as an event (app/tokens.py, app/auth.py).
--
-- access_closed holds one row from the moment any token existed: a database token
-- (the trigger below, whatever made it) or a bootstrap one (INFRAGRAPH_API_TOKENS:
-- the server writes the row at start-up). Without the row, and without bootstrap
-- tokens, the server is open: the first run only. Revoking, expiring or deleting every
-- token leaves the row, so the server stays closed.
CREATE TABLE access_closed (
    only_row   boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    closed_at  timestamptz NOT NULL DEFAULT now(),
    reason     text NOT NULL
);

INSERT INTO access_closed (reason)
SELECT 'database tokens existed before migration 0019' WHERE EXISTS (SELECT FROM api_tokens);

CREATE FUNCTION close_access() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO access_closed (reason) VALUES ('token ' || NEW.name || ' was made')
    ON CONFLICT (only_row) DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER api_tokens_close_access AFTER INSERT ON api_tokens
    FOR EACH ROW EXECUTE FUNCTION close_access();

-- Whether the token's expiry is on the audit trail (a `token-expire` event): the
-- server that flips it writes the event, in the same transaction, so there is one.
ALTER TABLE api_tokens ADD COLUMN expiry_recorded boolean NOT NULL DEFAULT false;

-- The tokens whose expiry is still to record, by when (app.tokens.record_expiries).
CREATE INDEX api_tokens_pending_expiry ON api_tokens (expires_at)
    WHERE expires_at IS NOT NULL AND NOT expiry_recorded AND revoked_at IS NULL;
