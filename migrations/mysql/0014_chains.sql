-- Chains: a run fired by a parent belongs to its root's chain (`runs.chain_id`; NULL for a
-- root, whose chain is its own id). `chain_runs` lists the runs of each chain beside the
-- root, written only when a child run is, so runs outside chains cost nothing more.
ALTER TABLE runs ADD COLUMN chain_id VARCHAR(40) NULL;
CREATE TABLE chain_runs (
    run_id          VARCHAR(40)  NOT NULL PRIMARY KEY,
    chain_id        VARCHAR(40)  NOT NULL,
    tenant_id       VARCHAR(40)  NOT NULL,
    KEY ix_chain_runs_chain (chain_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
