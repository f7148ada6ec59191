-- Fan-in: a job with several parents fires once per chain. `jobs.wait_for` says when
-- (`all` parents, or `any`); `chain_joins` holds, per chain and fan-in child, the parents
-- that have ended (or will never run) in that chain (SQLite has one writer at a time, so
-- arrivals are decided one after the other). The child run (fired or `skipped`) takes the
-- fire key `p:<chain id>`, so it exists at most once. `runs.parents` carries a fan-in
-- run's parents (their runs, states and outputs).
ALTER TABLE jobs ADD COLUMN wait_for TEXT NOT NULL DEFAULT 'all';
ALTER TABLE runs ADD COLUMN parents TEXT NULL;
CREATE TABLE chain_joins (
    chain_id TEXT NOT NULL,
    child_job_id TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    arrivals TEXT NOT NULL,
    run_id TEXT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (chain_id, child_job_id)
);
