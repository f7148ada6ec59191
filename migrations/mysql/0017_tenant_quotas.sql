-- Issue 26: tenant quotas. The operator's per-tenant settings (a JSON object of the quotas
-- set; the rest follow the node's defaults), log bytes per tenant per UTC day and per run,
-- and each job's peak fires per second (millionths, `sundial_core::quota::peak_fire_rate_micros`)
-- so a tenant's total is one index-only sum. Cron jobs written before this migration have a
-- NULL rate until the store fills it (their expressions are parsed in Rust, on the tenant's
-- next quota check).
CREATE TABLE tenant_quotas (
    tenant_id     VARCHAR(40) NOT NULL PRIMARY KEY,
    quotas        TEXT        NOT NULL,
    updated_at_ms BIGINT      NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE tenant_daily_usage (
    tenant_id VARCHAR(40) NOT NULL,
    day_ms    BIGINT      NOT NULL,
    log_bytes BIGINT      NOT NULL,
    PRIMARY KEY (tenant_id, day_ms)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE run_log_usage (
    run_id    VARCHAR(40) NOT NULL PRIMARY KEY,
    log_bytes BIGINT      NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
ALTER TABLE jobs ADD COLUMN fire_rate BIGINT NULL;
UPDATE jobs SET fire_rate = 0 WHERE schedule_kind IN ('once', 'manual');
UPDATE jobs SET fire_rate = CEIL(1000000000 / JSON_EXTRACT(schedule, '$.every_ms'))
    WHERE schedule_kind = 'fixed_rate' AND JSON_EXTRACT(schedule, '$.every_ms') > 0;
CREATE INDEX ix_jobs_quota ON jobs (tenant_id, fire_rate, state);
-- Deleting a job looks for the fan-ins still waiting in the job's tenant
-- (`chains::job_deleted`): through this index, not a scan of every tenant's joins.
CREATE INDEX ix_chain_joins_open ON chain_joins (tenant_id, run_id);
