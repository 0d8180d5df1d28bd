-- 0016_event_notify: every event announced on channel infragraph_events (its id as
-- the payload) for GraphQL subscriptions (app/graph/notify.py).
--
-- A trigger, so that every writer of events (app/graph/events.py, locks.py and
-- policies.py insert them) announces them without knowing. NOTIFY is delivered
-- at commit, never for a rolled-back write; every server listening on the
-- database gets it, whichever server wrote.
CREATE FUNCTION notify_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('infragraph_events', NEW.id::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION notify_event();
