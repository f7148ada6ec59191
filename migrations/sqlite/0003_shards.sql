-- Sharded runs: each shard has its own attempts, retry time, deadline and timings.
ALTER TABLE run_shards ADD COLUMN address TEXT NULL;
ALTER TABLE run_shards ADD COLUMN message TEXT NULL;
ALTER TABLE run_shards ADD COLUMN next_attempt_at_ms INTEGER NULL;
ALTER TABLE run_shards ADD COLUMN deadline_ms INTEGER NULL;
ALTER TABLE run_shards ADD COLUMN started_at_ms INTEGER NULL;
ALTER TABLE run_shards ADD COLUMN finished_at_ms INTEGER NULL;
-- The shard-retry duty scans due retries, the reaper scans deadlines.
CREATE INDEX ix_run_shards_retry ON run_shards (state, next_attempt_at_ms);
CREATE INDEX ix_run_shards_deadline ON run_shards (state, deadline_ms);
