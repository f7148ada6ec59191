-- Sharded runs: each shard has its own attempts, retry time, deadline and timings.
ALTER TABLE run_shards
    ADD COLUMN address            VARCHAR(2000) NULL,
    ADD COLUMN message            TEXT          NULL,
    ADD COLUMN next_attempt_at_ms BIGINT        NULL,
    ADD COLUMN deadline_ms        BIGINT        NULL,
    ADD COLUMN started_at_ms      BIGINT        NULL,
    ADD COLUMN finished_at_ms     BIGINT        NULL,
    MODIFY COLUMN executor_id     VARCHAR(2000) NULL;
-- An executor id is `static:<url>` for an app's static endpoint: longer than 40 characters.
ALTER TABLE attempts MODIFY COLUMN executor_id VARCHAR(2000) NULL;
-- The shard-retry duty scans due retries, the reaper scans deadlines.
CREATE INDEX ix_run_shards_retry ON run_shards (state, next_attempt_at_ms);
CREATE INDEX ix_run_shards_deadline ON run_shards (state, deadline_ms);
