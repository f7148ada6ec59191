-- Each tenant's job count and its active jobs' summed peak fire rate (millionths), kept by
-- every job write in its own transaction (`sql/quotas.rs`, `job_write_tx`): a quota check
-- reads this one row instead of counting the tenant's jobs, which took ~40 ms a write at
-- 100,000 jobs. A tenant's row is made by its first job write, which counts its jobs.
CREATE TABLE tenant_job_counts (
    tenant_id TEXT NOT NULL PRIMARY KEY,
    jobs INTEGER NOT NULL,
    fire_rate INTEGER NOT NULL
);
