-- Issue 14: one index for every time-driven scan of runs, one for the runs not yet finished
-- per job (see the MySQL migration of the same number for the reasoning and the measurement).
-- SQLite adds generated columns only as VIRTUAL (computed on read, indexed like any column).
DROP INDEX ix_runs_pending_kind;
DROP INDEX ix_runs_lease;
DROP INDEX ix_runs_retry;
DROP INDEX ix_runs_running;
DROP INDEX ix_runs_sched;
DROP INDEX ix_runs_job;
ALTER TABLE runs DROP COLUMN pending_at_ms;
ALTER TABLE runs DROP COLUMN running_deadline_ms;
ALTER TABLE runs ADD COLUMN wake_kind TEXT GENERATED ALWAYS AS (CASE
    WHEN state = 'pending' AND trigger_kind = 'schedule' THEN 'schedule'
    WHEN state = 'pending' THEN 'triggered'
    WHEN state IN ('queued', 'dispatching') THEN 'lease'
    WHEN state = 'retrying' THEN 'retry'
    WHEN state = 'running' THEN 'deadline' END) VIRTUAL;
ALTER TABLE runs ADD COLUMN wake_at_ms INTEGER GENERATED ALWAYS AS (CASE
    WHEN state = 'pending' THEN scheduled_at_ms
    WHEN state IN ('queued', 'dispatching') THEN lease_until_ms
    WHEN state = 'retrying' THEN next_attempt_at_ms
    WHEN state = 'running' THEN COALESCE(deadline_ms, 0) END) VIRTUAL;
ALTER TABLE runs ADD COLUMN open_job_id TEXT GENERATED ALWAYS AS (CASE
    WHEN state IN ('pending', 'queued', 'dispatching', 'running', 'retrying') THEN job_id END) VIRTUAL;
CREATE INDEX ix_runs_wake ON runs (wake_kind, wake_at_ms);
CREATE INDEX ix_runs_open ON runs (open_job_id, state);
