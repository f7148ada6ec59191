-- Issue 14: a fire's run row was inserted into eight secondary indexes, four of them keyed on
-- time columns that only one state uses each (pending, lease, retry, running deadline), and
-- its job's entry in `ix_runs_job (job_id, state)` was in an index of every run ever, moved at
-- each state change. The states those scans look for exclude each other, so one generated pair
-- `(wake_kind, wake_at_ms)` serves every one of them through one index:
--   schedule   pending schedule fire        at scheduled_at_ms   (the peek, the claim's backstop)
--   triggered  pending manual/API/child run at scheduled_at_ms   (the claim)
--   lease      queued or dispatching        at lease_until_ms    (recovery of expired claims)
--   retry      retrying                     at next_attempt_at_ms
--   deadline   running                      at deadline_ms, 0 if none (the reaper)
-- and NULL for a finished run. `open_job_id` is the job of a run not yet finished (NULL after):
-- the in-flight reads per job and the deletes of a job's pending runs go through the small
-- `ix_runs_open`, not an index holding every run. Retention, which scanned `ix_runs_sched`,
-- reads each tenant's old runs through `ix_runs_tenant` (tenant, scheduled time).
-- Measured on 400,000 fires (insert as dispatched, then the result): 54 → 42 µs of database
-- time per fire. Adding STORED columns rebuilds the table: on a large `runs` table this
-- migration takes a while.
ALTER TABLE runs
    DROP INDEX ix_runs_pending_kind,
    DROP INDEX ix_runs_lease,
    DROP INDEX ix_runs_retry,
    DROP INDEX ix_runs_running,
    DROP INDEX ix_runs_sched,
    DROP INDEX ix_runs_job,
    DROP COLUMN pending_at_ms,
    DROP COLUMN running_deadline_ms,
    ADD COLUMN wake_kind VARCHAR(16) AS (CASE
        WHEN state = 'pending' AND trigger_kind = 'schedule' THEN 'schedule'
        WHEN state = 'pending' THEN 'triggered'
        WHEN state IN ('queued', 'dispatching') THEN 'lease'
        WHEN state = 'retrying' THEN 'retry'
        WHEN state = 'running' THEN 'deadline' END) STORED,
    ADD COLUMN wake_at_ms BIGINT AS (CASE
        WHEN state = 'pending' THEN scheduled_at_ms
        WHEN state IN ('queued', 'dispatching') THEN lease_until_ms
        WHEN state = 'retrying' THEN next_attempt_at_ms
        WHEN state = 'running' THEN COALESCE(deadline_ms, 0) END) STORED,
    ADD COLUMN open_job_id VARCHAR(40) AS (CASE
        WHEN state IN ('pending', 'queued', 'dispatching', 'running', 'retrying') THEN job_id END) STORED,
    ADD INDEX ix_runs_wake (wake_kind, wake_at_ms),
    ADD INDEX ix_runs_open (open_job_id, state);
