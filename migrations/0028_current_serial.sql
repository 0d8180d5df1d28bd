-- 0028_current_serial: each state's current (highest) serial on its row, kept by the
-- write that makes a version (app/graph/write/version.py; pruning never removes the
-- current version). The current versions of many states are then found by
-- (state_id, serial), one index probe a state, on a single node as on Citus, where a
-- LATERAL ... LIMIT 1 per state from `states` (a reference table) does not run and a
-- DISTINCT ON over state_versions reads every version of every state.
ALTER TABLE states ADD COLUMN current_serial bigint;
UPDATE states s SET current_serial = v.serial
FROM (SELECT state_id, max(serial) AS serial FROM state_versions GROUP BY state_id) v
WHERE v.state_id = s.id;
