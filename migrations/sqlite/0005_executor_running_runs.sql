-- The run ids an executor reported running in its latest heartbeat (a JSON array, or NULL when not reported).
-- A retry waits while the executor of the timed-out attempt still lists its run.
ALTER TABLE executors ADD COLUMN running_runs TEXT NULL;
