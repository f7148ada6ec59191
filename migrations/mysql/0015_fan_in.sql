-- Fan-in: a job with several parents fires once per chain. `jobs.wait_for` says when
-- (`all` parents, or `any`); `chain_joins` holds, per chain and fan-in child, the parents
-- that have ended (or will never run) in that chain: the row is locked by every arrival,
-- so two parents ending at once on two nodes are decided one after the other. The child
-- run (fired or `skipped`) takes the fire key `p:<chain id>`, so it exists at most once.
-- `runs.parents` carries a fan-in run's parents (their runs, states and outputs).
ALTER TABLE jobs ADD COLUMN wait_for VARCHAR(10) NOT NULL DEFAULT 'all';
ALTER TABLE runs ADD COLUMN parents MEDIUMTEXT NULL;
CREATE TABLE chain_joins (
    chain_id        VARCHAR(40)  NOT NULL,
    child_job_id    VARCHAR(40)  NOT NULL,
    tenant_id       VARCHAR(40)  NOT NULL,
    arrivals        MEDIUMTEXT   NOT NULL,
    run_id          VARCHAR(40)  NULL,
    created_at_ms   BIGINT       NOT NULL,
    updated_at_ms   BIGINT       NOT NULL,
    PRIMARY KEY (chain_id, child_job_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
