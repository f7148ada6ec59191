-- Sundial schema, MySQL / MariaDB dialect. Instants are BIGINT UTC epoch milliseconds.
CREATE TABLE tenants (
    id              VARCHAR(40)  NOT NULL PRIMARY KEY,
    name            VARCHAR(100) NOT NULL,
    created_at_ms   BIGINT       NOT NULL,
    UNIQUE KEY uq_tenants_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE api_keys (
    id              VARCHAR(40)  NOT NULL PRIMARY KEY,
    tenant_id       VARCHAR(40)  NULL,
    name            VARCHAR(100) NOT NULL,
    role            VARCHAR(16)  NOT NULL,
    key_hash        CHAR(64)     NOT NULL,
    display_prefix  VARCHAR(16)  NOT NULL,
    created_at_ms   BIGINT       NOT NULL,
    last_used_at_ms BIGINT       NULL,
    UNIQUE KEY uq_api_keys_hash (key_hash),
    KEY ix_api_keys_tenant (tenant_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE apps (
    id                  VARCHAR(40)  NOT NULL PRIMARY KEY,
    tenant_id           VARCHAR(40)  NOT NULL,
    name                VARCHAR(100) NOT NULL,
    description         TEXT         NOT NULL,
    endpoints           TEXT         NOT NULL,
    secret              VARCHAR(100) NOT NULL,
    previous_secret     VARCHAR(100) NULL,
    previous_expires_ms BIGINT       NULL,
    created_at_ms       BIGINT       NOT NULL,
    updated_at_ms       BIGINT       NOT NULL,
    UNIQUE KEY uq_apps_name (tenant_id, name),
    KEY ix_apps_tenant (tenant_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE executors (
    id                  VARCHAR(40)   NOT NULL PRIMARY KEY,
    tenant_id           VARCHAR(40)   NOT NULL,
    app_id              VARCHAR(40)   NOT NULL,
    name                VARCHAR(200)  NOT NULL,
    address             VARCHAR(2000) NOT NULL,
    address_hash        CHAR(64)      NOT NULL,
    tags                TEXT          NOT NULL,
    metadata            TEXT          NOT NULL,
    handlers            TEXT          NOT NULL,
    state               VARCHAR(16)   NOT NULL,
    running             BIGINT        NOT NULL DEFAULT 0,
    registered_at_ms    BIGINT        NOT NULL,
    last_heartbeat_ms   BIGINT        NOT NULL,
    last_metadata_ms    BIGINT        NOT NULL,
    UNIQUE KEY uq_executors_address (app_id, address_hash),
    KEY ix_executors_heartbeat (state, last_heartbeat_ms)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE scripts (
    id              VARCHAR(40)  NOT NULL PRIMARY KEY,
    tenant_id       VARCHAR(40)  NOT NULL,
    name            VARCHAR(100) NOT NULL,
    runtime         VARCHAR(16)  NOT NULL,
    current_version BIGINT       NOT NULL,
    created_at_ms   BIGINT       NOT NULL,
    updated_at_ms   BIGINT       NOT NULL,
    UNIQUE KEY uq_scripts_name (tenant_id, name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE script_versions (
    script_id       VARCHAR(40)  NOT NULL,
    version         BIGINT       NOT NULL,
    source          LONGTEXT     NOT NULL,
    sha256          CHAR(64)     NOT NULL,
    note            TEXT         NOT NULL,
    created_at_ms   BIGINT       NOT NULL,
    PRIMARY KEY (script_id, version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE jobs (
    id                  VARCHAR(40)  NOT NULL PRIMARY KEY,
    tenant_id           VARCHAR(40)  NOT NULL,
    app_id              VARCHAR(40)  NOT NULL,
    name                VARCHAR(100) NOT NULL,
    description         TEXT         NOT NULL,
    handler             VARCHAR(200) NULL,
    script_id           VARCHAR(40)  NULL,
    schedule_kind       VARCHAR(16)  NOT NULL,
    schedule            TEXT         NOT NULL,
    params              MEDIUMTEXT   NOT NULL,
    route               VARCHAR(32)  NOT NULL,
    block_strategy      VARCHAR(32)  NOT NULL,
    misfire             TEXT         NOT NULL,
    failure             TEXT         NOT NULL,
    timeout_ms          BIGINT       NOT NULL,
    max_concurrency     BIGINT       NULL,
    state               VARCHAR(16)  NOT NULL,
    source              VARCHAR(16)  NOT NULL,
    registration_key    VARCHAR(300) NULL,
    version             BIGINT       NOT NULL,
    generated_until_ms  BIGINT       NULL,
    created_at_ms       BIGINT       NOT NULL,
    updated_at_ms       BIGINT       NOT NULL,
    UNIQUE KEY uq_jobs_registration (registration_key),
    KEY ix_jobs_tenant (tenant_id, id),
    KEY ix_jobs_app (app_id),
    KEY ix_jobs_generate (state, generated_until_ms)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE job_children (
    parent_job_id   VARCHAR(40) NOT NULL,
    child_job_id    VARCHAR(40) NOT NULL,
    tenant_id       VARCHAR(40) NOT NULL,
    created_at_ms   BIGINT      NOT NULL,
    PRIMARY KEY (parent_job_id, child_job_id),
    KEY ix_job_children_child (child_job_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE runs (
    id                  VARCHAR(40)  NOT NULL PRIMARY KEY,
    tenant_id           VARCHAR(40)  NOT NULL,
    job_id              VARCHAR(40)  NOT NULL,
    fire_key            VARCHAR(255) NOT NULL,
    trigger_kind        VARCHAR(16)  NOT NULL,
    scheduled_at_ms     BIGINT       NOT NULL,
    state               VARCHAR(16)  NOT NULL,
    attempt             BIGINT       NOT NULL DEFAULT 0,
    shard_total         BIGINT       NULL,
    params              MEDIUMTEXT   NULL,
    parent_run_id       VARCHAR(40)  NULL,
    parent_output       MEDIUMTEXT   NULL,
    job_version         BIGINT       NOT NULL,
    owner_node          VARCHAR(40)  NULL,
    lease_until_ms      BIGINT       NULL,
    deadline_ms         BIGINT       NULL,
    next_attempt_at_ms  BIGINT       NULL,
    reason              VARCHAR(64)  NULL,
    message             TEXT         NULL,
    output              MEDIUMTEXT   NULL,
    expired_count       BIGINT       NOT NULL DEFAULT 0,
    created_at_ms       BIGINT       NOT NULL,
    updated_at_ms       BIGINT       NOT NULL,
    started_at_ms       BIGINT       NULL,
    finished_at_ms      BIGINT       NULL,
    UNIQUE KEY uq_runs_fire (job_id, fire_key),
    KEY ix_runs_due (state, scheduled_at_ms),
    KEY ix_runs_job (job_id, state),
    KEY ix_runs_tenant (tenant_id, scheduled_at_ms, id),
    KEY ix_runs_owner (owner_node, state),
    KEY ix_runs_retry (state, next_attempt_at_ms)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE run_shards (
    run_id          VARCHAR(40) NOT NULL,
    shard_index     BIGINT      NOT NULL,
    state           VARCHAR(16) NOT NULL,
    attempt         BIGINT      NOT NULL DEFAULT 0,
    executor_id     VARCHAR(40) NULL,
    reason          VARCHAR(64) NULL,
    output          MEDIUMTEXT  NULL,
    updated_at_ms   BIGINT      NOT NULL,
    PRIMARY KEY (run_id, shard_index)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE attempts (
    run_id          VARCHAR(40)   NOT NULL,
    shard_index     BIGINT        NOT NULL,
    attempt         BIGINT        NOT NULL,
    webhook_id      VARCHAR(80)   NOT NULL,
    executor_id     VARCHAR(40)   NULL,
    address         VARCHAR(2000) NULL,
    state           VARCHAR(16)   NOT NULL,
    reason          VARCHAR(64)   NULL,
    message         TEXT          NULL,
    trail           TEXT          NOT NULL,
    output          MEDIUMTEXT    NULL,
    started_at_ms   BIGINT        NOT NULL,
    finished_at_ms  BIGINT        NULL,
    PRIMARY KEY (run_id, shard_index, attempt)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE run_logs (
    id              BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    run_id          VARCHAR(40)  NOT NULL,
    shard_index     BIGINT       NOT NULL,
    attempt         BIGINT       NOT NULL,
    at_ms           BIGINT       NOT NULL,
    level           VARCHAR(16)  NOT NULL,
    message         TEXT         NOT NULL,
    KEY ix_run_logs_run (run_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE nodes (
    id              VARCHAR(40)  NOT NULL PRIMARY KEY,
    address         VARCHAR(200) NOT NULL,
    version         VARCHAR(40)  NOT NULL,
    state           VARCHAR(16)  NOT NULL,
    claimed         BIGINT       NOT NULL DEFAULT 0,
    started_at_ms   BIGINT       NOT NULL,
    heartbeat_at_ms BIGINT       NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE seen_webhooks (
    app_id          VARCHAR(40)  NOT NULL,
    webhook_id      VARCHAR(200) NOT NULL,
    seen_at_ms      BIGINT       NOT NULL,
    PRIMARY KEY (app_id, webhook_id),
    KEY ix_seen_webhooks_at (seen_at_ms)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE settings (
    name            VARCHAR(100) NOT NULL PRIMARY KEY,
    value           TEXT         NOT NULL,
    updated_at_ms   BIGINT       NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
