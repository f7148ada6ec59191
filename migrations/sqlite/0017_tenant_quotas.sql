-- Issue 26: tenant quotas. The operator's per-tenant settings (a JSON object of the quotas
-- set; the rest follow the node's defaults), log bytes per tenant per UTC day and per run,
-- and each job's peak fires per second (millionths, `sundial_core::quota::peak_fire_rate_micros`)
-- so a tenant's total is one index-only sum. Cron jobs written before this migration have a
-- NULL rate until the store fills it (their expressions are parsed in Rust, on the tenant's
-- next quota check).
CREATE TABLE tenant_quotas (
    tenant_id TEXT NOT NULL PRIMARY KEY,
    quotas TEXT NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
CREATE TABLE tenant_daily_usage (
    tenant_id TEXT NOT NULL,
    day_ms INTEGER NOT NULL,
    log_bytes INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, day_ms)
);
CREATE TABLE run_log_usage (
    run_id TEXT NOT NULL PRIMARY KEY,
    log_bytes INTEGER NOT NULL
);
ALTER TABLE jobs ADD COLUMN fire_rate INTEGER NULL;
UPDATE jobs SET fire_rate = 0 WHERE schedule_kind IN ('once', 'manual');
UPDATE jobs SET fire_rate = (1000000000 + json_extract(schedule, '$.every_ms') - 1) / json_extract(schedule, '$.every_ms')
    WHERE schedule_kind = 'fixed_rate' AND json_extract(schedule, '$.every_ms') > 0;
CREATE INDEX ix_jobs_quota ON jobs (tenant_id, fire_rate, state);
-- Deleting a job looks for the fan-ins still waiting in the job's tenant
-- (`chains::job_deleted`): through this index, not a scan of every tenant's joins.
CREATE INDEX ix_chain_joins_open ON chain_joins (tenant_id, run_id);
