-- 0024_webhooks: HTTP callbacks on events (app/webhooks/, docs/webhooks.md).
--
-- webhooks: a subscription. `events` are the event kinds it asked for (app/webhooks/
-- kinds.py); `actions` the actions of the events table those kinds stand for, derived
-- from them by the server (on every change, and again at start-up, so a release that
-- maps a kind to more actions reaches existing webhooks). `states`: globs over state
-- names (may_read, migration 0013), NULL: every state. `secret`: the HMAC key, sealed
-- like other secrets (app/crypto.py) with the webhook's id as context.
CREATE TABLE webhooks (
    id          uuid PRIMARY KEY,
    url         text NOT NULL,
    events      text[] NOT NULL,
    actions     text[] NOT NULL,
    states      text[],
    secret      bytea NOT NULL,
    format      text NOT NULL DEFAULT 'json' CHECK (format IN ('json', 'slack')),
    failing     boolean NOT NULL DEFAULT false,
    created_by  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The outbox: one row per event and webhook it matches, queued by the trigger below in
-- the transaction that writes the event, so a delivery exists if and only if its event
-- committed. `seq` orders a webhook's deliveries of one state: the worker sends the
-- oldest pending one of each (webhook, state) only. A delivery being sent is `pending`
-- with next_attempt_at pushed past the attempt's end (a lease): a process that dies
-- mid-send leaves it to be sent again (at least once).
CREATE TABLE webhook_deliveries (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    seq              bigint GENERATED ALWAYS AS IDENTITY,
    webhook_id       uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id         uuid NOT NULL,  -- events.id (events are never deleted)
    state_name       text NOT NULL,
    status           text NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'delivered', 'dead')),
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    last_attempt_at  timestamptz,
    last_status      integer,  -- the receiver's HTTP status, NULL when none came
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    delivered_at     timestamptz
);

-- what is due, oldest first; and the "is an older one pending" check of each
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (webhook_id, state_name, seq)
    WHERE status = 'pending';
-- a webhook's deliveries, newest first (Webhook.deliveries)
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, seq DESC);

-- Every event, whoever inserts it (app/graph/events.py, locks.py, policies.py, the
-- webhook worker), queues its deliveries here. A webhook is not sent its own
-- `webhook-failing` event (a receiver that is down would only queue more).
CREATE FUNCTION queue_webhook_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_deliveries (webhook_id, event_id, state_name)
    SELECT w.id, NEW.id, NEW.state_name FROM webhooks w
    WHERE NEW.action = ANY (w.actions)
      AND may_read(NEW.state_name, w.states)
      AND NOT (NEW.action = 'webhook-failing' AND NEW.detail ->> 'webhook' = w.id::text);
    IF FOUND THEN
        PERFORM pg_notify('infragraph_webhooks', '');
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER events_webhooks AFTER INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION queue_webhook_deliveries();
