-- 0027_sensitive_outputs: the names of each state's outputs that are sensitive in a version
-- it keeps (app/graph/sealing.py keeps it as its outputs are written and pruned).
--
-- Every read of a terraform_remote_state row withholds the outputs its producer marks
-- sensitive (app/graph/links.py, sensitive_attributes): this small table lets that read
-- stay on the consumer's rows instead of reaching into the producer's outputs, which on
-- Citus live on another shard (a reference table there, app/citus.py).
CREATE TABLE sensitive_outputs (
    state_id  uuid NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    name      text NOT NULL,
    PRIMARY KEY (state_id, name)
);
INSERT INTO sensitive_outputs (state_id, name)
    SELECT DISTINCT state_id, name FROM outputs WHERE sensitive;
