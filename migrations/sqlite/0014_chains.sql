-- Chains: a run fired by a parent belongs to its root's chain (`runs.chain_id`; NULL for a
-- root, whose chain is its own id). `chain_runs` lists the runs of each chain beside the
-- root, written only when a child run is, so runs outside chains cost nothing more.
ALTER TABLE runs ADD COLUMN chain_id TEXT NULL;
CREATE TABLE chain_runs (
    run_id TEXT NOT NULL PRIMARY KEY,
    chain_id TEXT NOT NULL,
    tenant_id TEXT NOT NULL
);
CREATE INDEX ix_chain_runs_chain ON chain_runs (chain_id);
