-- The newest events of all states (the dashboard's overview, Query.events without a
-- state): one range of this index instead of a sort of the whole audit trail.
CREATE INDEX events_by_time ON events (created_at DESC, id DESC);
