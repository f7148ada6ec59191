-- A run of a script job records the script version it ran (set when an attempt is
-- delivered), and an executor says which script runtimes it runs (a `sundial runner`;
-- empty for a webhook executor, which never receives a script run).
ALTER TABLE runs ADD COLUMN script_version INTEGER NULL;
ALTER TABLE executors ADD COLUMN runtimes TEXT NOT NULL DEFAULT '[]';
