-- Sundial schema, SQLite dialect (generated from the MySQL file by hand-kept rules: same tables, columns and keys). Instants are INTEGER UTC epoch milliseconds.
CREATE TABLE tenants (
    id TEXT NOT NULL PRIMARY KEY,
    name TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL
);
CREATE UNIQUE INDEX uq_tenants_name ON tenants (name);
CREATE TABLE api_keys (
    id TEXT NOT NULL PRIMARY KEY,
    tenant_id TEXT NULL,
    name TEXT NOT NULL,
    role TEXT NOT NULL,
    key_hash TEXT NOT NULL,
    display_prefix TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    last_used_at_ms INTEGER NULL
);
CREATE UNIQUE INDEX uq_api_keys_hash ON api_keys (key_hash);
CREATE INDEX ix_api_keys_tenant ON api_keys (tenant_id, id);
CREATE TABLE apps (
    id TEXT NOT NULL PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    endpoints TEXT NOT NULL,
    secret TEXT NOT NULL,
    previous_secret TEXT NULL,
    previous_expires_ms INTEGER NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
CREATE UNIQUE INDEX uq_apps_name ON apps (tenant_id, name);
CREATE INDEX ix_apps_tenant ON apps (tenant_id, id);
CREATE TABLE executors (
    id TEXT NOT NULL PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    app_id TEXT NOT NULL,
    name TEXT NOT NULL,
    address TEXT NOT NULL,
    address_hash TEXT NOT NULL,
    tags TEXT NOT NULL,
    metadata TEXT NOT NULL,
    handlers TEXT NOT NULL,
    state TEXT NOT NULL,
    running INTEGER NOT NULL DEFAULT 0,
    registered_at_ms INTEGER NOT NULL,
    last_heartbeat_ms INTEGER NOT NULL,
    last_metadata_ms INTEGER NOT NULL
);
CREATE UNIQUE INDEX uq_executors_address ON executors (app_id, address_hash);
CREATE INDEX ix_executors_heartbeat ON executors (state, last_heartbeat_ms);
CREATE TABLE scripts (
    id TEXT NOT NULL PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    name TEXT NOT NULL,
    runtime TEXT NOT NULL,
    current_version INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
CREATE UNIQUE INDEX uq_scripts_name ON scripts (tenant_id, name);
CREATE TABLE script_versions (
    script_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    source TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    note TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    PRIMARY KEY (script_id, version)
);
CREATE TABLE jobs (
    id TEXT NOT NULL PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    app_id TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    handler TEXT NULL,
    script_id TEXT NULL,
    schedule_kind TEXT NOT NULL,
    schedule TEXT NOT NULL,
    params TEXT NOT NULL,
    route TEXT NOT NULL,
    block_strategy TEXT NOT NULL,
    misfire TEXT NOT NULL,
    failure TEXT NOT NULL,
    timeout_ms INTEGER NOT NULL,
    max_concurrency INTEGER NULL,
    state TEXT NOT NULL,
    source TEXT NOT NULL,
    registration_key TEXT NULL,
    version INTEGER NOT NULL,
    generated_until_ms INTEGER NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
CREATE UNIQUE INDEX uq_jobs_registration ON jobs (registration_key);
CREATE INDEX ix_jobs_tenant ON jobs (tenant_id, id);
CREATE INDEX ix_jobs_app ON jobs (app_id);
CREATE INDEX ix_jobs_generate ON jobs (state, generated_until_ms);
CREATE TABLE job_children (
    parent_job_id TEXT NOT NULL,
    child_job_id TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    PRIMARY KEY (parent_job_id, child_job_id)
);
CREATE INDEX ix_job_children_child ON job_children (child_job_id);
CREATE TABLE runs (
    id TEXT NOT NULL PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    job_id TEXT NOT NULL,
    fire_key TEXT NOT NULL,
    trigger_kind TEXT NOT NULL,
    scheduled_at_ms INTEGER NOT NULL,
    state TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    shard_total INTEGER NULL,
    params TEXT NULL,
    parent_run_id TEXT NULL,
    parent_output TEXT NULL,
    job_version INTEGER NOT NULL,
    owner_node TEXT NULL,
    lease_until_ms INTEGER NULL,
    deadline_ms INTEGER NULL,
    next_attempt_at_ms INTEGER NULL,
    reason TEXT NULL,
    message TEXT NULL,
    output TEXT NULL,
    expired_count INTEGER NOT NULL DEFAULT 0,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    started_at_ms INTEGER NULL,
    finished_at_ms INTEGER NULL
);
CREATE UNIQUE INDEX uq_runs_fire ON runs (job_id, fire_key);
CREATE INDEX ix_runs_due ON runs (state, scheduled_at_ms);
CREATE INDEX ix_runs_job ON runs (job_id, state);
CREATE INDEX ix_runs_tenant ON runs (tenant_id, scheduled_at_ms, id);
CREATE INDEX ix_runs_owner ON runs (owner_node, state);
CREATE INDEX ix_runs_retry ON runs (state, next_attempt_at_ms);
CREATE TABLE run_shards (
    run_id TEXT NOT NULL,
    shard_index INTEGER NOT NULL,
    state TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    executor_id TEXT NULL,
    reason TEXT NULL,
    output TEXT NULL,
    updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (run_id, shard_index)
);
CREATE TABLE attempts (
    run_id TEXT NOT NULL,
    shard_index INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    webhook_id TEXT NOT NULL,
    executor_id TEXT NULL,
    address TEXT NULL,
    state TEXT NOT NULL,
    reason TEXT NULL,
    message TEXT NULL,
    trail TEXT NOT NULL,
    output TEXT NULL,
    started_at_ms INTEGER NOT NULL,
    finished_at_ms INTEGER NULL,
    PRIMARY KEY (run_id, shard_index, attempt)
);
CREATE TABLE run_logs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    shard_index INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    level TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX ix_run_logs_run ON run_logs (run_id, id);
CREATE TABLE nodes (
    id TEXT NOT NULL PRIMARY KEY,
    address TEXT NOT NULL,
    version TEXT NOT NULL,
    state TEXT NOT NULL,
    claimed INTEGER NOT NULL DEFAULT 0,
    started_at_ms INTEGER NOT NULL,
    heartbeat_at_ms INTEGER NOT NULL
);
CREATE TABLE seen_webhooks (
    app_id TEXT NOT NULL,
    webhook_id TEXT NOT NULL,
    seen_at_ms INTEGER NOT NULL,
    PRIMARY KEY (app_id, webhook_id)
);
CREATE INDEX ix_seen_webhooks_at ON seen_webhooks (seen_at_ms);
CREATE TABLE settings (
    name TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
