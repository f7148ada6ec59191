-- Every state change of a run rewrote its entry in each index that contains `state`
-- (six of them), the main cost of a fire on the database. These three columns are set
-- only while a run is in flight (cleared when it leaves that state), so an index on the
-- column alone finds the same rows, and a change of state alone no longer touches it.
DROP INDEX ix_runs_retry;
CREATE INDEX ix_runs_retry ON runs (next_attempt_at_ms);
DROP INDEX ix_runs_lease;
CREATE INDEX ix_runs_lease ON runs (lease_until_ms);
DROP INDEX ix_runs_owner;
CREATE INDEX ix_runs_owner ON runs (owner_node);
