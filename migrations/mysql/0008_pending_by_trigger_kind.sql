-- The peek reads a node's pending schedule fires after a cursor, and the claim takes the
-- triggered runs (manual, API, children) due soon plus, as a backstop, schedule fires overdue
-- past the affinity grace. Keyed on `pending_at_ms` alone, the claim's scan for triggered runs
-- walked (and locked, FOR UPDATE) every pending schedule fire in its range, the very rows the
-- dispatch transactions were locking. Led by the trigger kind (which never changes), each scan
-- reads only its own kind, and a state change rewrites the same single entry as before.
CREATE INDEX ix_runs_pending_kind ON runs (trigger_kind, pending_at_ms);
DROP INDEX ix_runs_pending ON runs;
