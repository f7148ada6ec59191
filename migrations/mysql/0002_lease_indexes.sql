-- Claim recovery and the reaper scan by (state, lease) and (state, deadline).
CREATE INDEX ix_runs_lease ON runs (state, lease_until_ms);
CREATE INDEX ix_runs_deadline ON runs (state, deadline_ms);
