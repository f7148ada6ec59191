-- A fire changed its run's entry in every index that holds `state`, `owner_node` or
-- `deadline_ms` at each of its three state changes (claim, dispatch, result): fourteen
-- index entries rewritten per fire, then purged, the largest cost of a fire on the
-- database. Each index below now holds only the runs its scans look for, through a
-- generated column that is NULL otherwise, so a state change outside that set leaves it alone:
--   pending_at_ms        the claim's scan of due pending runs (set while `pending`)
--   running_deadline_ms  the reaper's scans of `running` runs (deadline, or 0 if none)
--   scheduled_at_ms      retention's scan of old finished runs (never changes)
-- and the hand-back of a node's claims scans `ix_runs_lease` (a claimed run always holds a lease).
-- Adding STORED columns rebuilds the table: on a large `runs` table this migration takes a while.
ALTER TABLE runs
    ADD COLUMN pending_at_ms BIGINT AS (CASE WHEN state = 'pending' THEN scheduled_at_ms END) STORED,
    ADD COLUMN running_deadline_ms BIGINT AS (CASE WHEN state = 'running' THEN COALESCE(deadline_ms, 0) END) STORED;
CREATE INDEX ix_runs_pending ON runs (pending_at_ms);
CREATE INDEX ix_runs_running ON runs (running_deadline_ms);
CREATE INDEX ix_runs_sched ON runs (scheduled_at_ms);
DROP INDEX ix_runs_due ON runs;
DROP INDEX ix_runs_deadline ON runs;
DROP INDEX ix_runs_owner ON runs;
